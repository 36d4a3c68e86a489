package dev.ubuf.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Bad benchmark input ends in one sentence that names the option and what it accepts, with exit code 2, before any
 * GPU work. These tests run without a GPU, where any GPU work would end in "no CUDA driver" instead: the sentence
 * being the option's proves the check came first.
 */
class BenchInputTest {
    @ParameterizedTest(name = "ubuf {0}")
    @CsvSource(delimiter = '|', textBlock = """
            bench ag --iters 0                        | --iters must be at least 1, got 0
            bench rs --iters -5                       | --iters must be at least 1, got -5
            bench gemm --iters 0                      | --iters must be at least 1, got 0
            bench p2p --iters 0                       | --iters must be at least 1, got 0
            bench ag --warmup -1                      | --warmup must be at least 0, got -1
            bench rs --calls-per-sample 0             | --calls-per-sample must be 1..64, got 0
            bench sweep --calls-per-sample 65         | --calls-per-sample must be 1..64, got 65
            bench gemm --warmup -1                    | --warmup must be at least 0, got -1
            bench p2p --bytes -1                      | --bytes must be at least 1, got -1
            bench pushes --tp 1                       | --tp must be 2..64, got 1
            bench pushes --iters 0                    | --iters must be at least 1, got 0
            bench pushes --sizes 1048576,3            | --sizes: 3 must be an even number of bytes, 2..1 GiB
            bench pushes --sm-ctas 8,0                | --sm-ctas must be 1..64, got 0
            bench gemm --m 0                          | --m must be at least 1, got 0
            bench gemm --k -3                         | --k must be at least 1, got -3
            bench gemm --device -1                    | --device must be at least 0, got -1
            bench gemm --retune-margin 0.02           | --retune-margin applies to --retune
            bench gemm --call 0                       | --call: a variant is MIB:SMS (e.g. 0:132), got '0'
            bench gemm --retune --retune-margin 0.9   | --retune-margin must be 0 to 0.5, got 0.9
            bench gemm --fp8 slow                     | --fp8 is split or fast, got 'slow'
            bench gemm --fp8 split --dtype fp16       | --fp8 quantizes bf16 operands and writes bf16: --dtype must be bf16, got fp16
            bench gemm --fp8 fast --variant 0:132     | --variant is not supported with --fp8
            bench gemm --fp8 split --retune           | --retune is not supported with --fp8
            bench gemm --fp8 split --shapes 1024,4096,4100 | --fp8: every dimension must be a multiple of 16 for FP8 on Hopper, got 1024,4096,4100
            bench gemm --fp8 fast --m 100             | --fp8: every dimension must be a multiple of 16 for FP8 on Hopper, got 100,8192,8192
            bench fp8 --iters 0                       | --iters must be at least 1, got 0
            bench fp8 --shapes 8192,8192,8200         | --shapes: shape '8192,8192,8200' cannot run as an FP8 GEMM: every dimension must be a multiple of 16
            bench ag --tp 1                           | --tp must be 2..8, got 1
            bench rs --tp 16                          | --tp must be 2..8, got 16
            bench ag --tp 3                           | --shapes: default shape 4096,8192,8192 (from --shapes' default) cannot run with --tp 3: m = 4096 rows cannot be split evenly
            bench rs --tp 3 --shapes 3001,64,64       | --shapes: shape '3001,64,64' cannot run with --tp 3: m=3001 is not divisible by tp=3
            bench ag --shapes 1,2                     | --shapes: a shape is M,K,N (three positive integers), got '1,2'
            bench rs --shapes 4096,0,8                | --shapes: a shape is M,K,N (three positive integers), got '4096,0,8'
            bench rs --methods bogus                  | --methods: unknown method 'bogus'; methods: oneshot, pipeline, ring, scatter, auto, nccl
            bench ag --methods spiral:cs=1            | --methods: unknown method 'spiral' in 'spiral:cs=1'; methods: aggregate, bidir, fanout, oneshot, ring, auto, nccl
            bench ag --methods bulk                   | --methods: unknown method 'bulk'; methods: aggregate, bidir, fanout, oneshot, ring, auto, nccl
            bench rs --methods ring:cs=x              | --methods: 'ring:cs=x': method 'ring' option cs=x is not an integer (compute streams
            bench rs --methods ring:cs                | --methods: 'ring:cs': bad option 'cs' in 'ring:cs' (expected key=value; ring's options: cs =
            bench ag --methods ring:zz=1              | --methods: 'ring:zz=1': method 'ring' has no option 'zz'; its options: cs = compute streams
            bench rs --methods ring:ms=2              | --methods: 'ring:ms=2': method 'ring' has no option 'ms'; its options: cs =
            bench ag --methods ring:cs=0              | --methods: 'ring:cs=0': method 'ring' option cs=0 is outside 1..3 (compute streams
            bench rs --methods ring:lowp=2            | --methods: 'ring:lowp=2': method 'ring' option lowp=2 must be 0 or 1 (ring, scatter: 1 = partial sums travel in the op's dtype
            bench rs --methods ring;ring              | --methods: 'ring' is listed twice
            bench rs --fp8-output bf16                | --fp8-output is e4m3 or e5m2, got 'bf16'
            bench rs --methods auto:cs=1              | --methods: 'auto:cs=1': auto takes no options
            bench rs --methods nccl:splits=3          | --methods: 'nccl:splits=3' cannot run M=4096 K=8192 N=8192 with --tp 2: nccl:splits=3: n=8192 does not split into 3 blocks
            bench rs --methods nccl:sub=2             | --methods: 'nccl:sub=2': method 'nccl' has no option 'sub'; its options: splits =
            bench ag --methods nccl:splits=2          | --methods: 'nccl:splits=2' cannot run M=4096 K=8192 N=8192 with --tp 2: nccl:splits=2: only the reduce-scatter is pipelined
            bench rs --methods nccl:splits=4,margin=99 | --methods: 'nccl:splits=4,margin=99': method 'nccl' option margin=99 is outside 0..64
            bench ag --methods ;                      | --methods: no method given; methods: aggregate, bidir, fanout, oneshot, ring, auto, nccl
            bench rs --methods pipeline:splits=3      | --methods: 'pipeline:splits=3' cannot run M=4096 K=8192 N=8192 with --tp 2: pipeline: n=8192 is not divisible by numSplits=3
            bench rs --methods ring:sub=4096 --shapes 4096,64,64 | --methods: 'ring:sub=4096' cannot run M=4096 K=64 N=64 with --tp 2: ring: ringSubChunks=4096 exceeds m/tp=2048
            bench ag --dtype fp8e4m3                  | Invalid value for option '--dtype': expected one of bf16, fp16, fp32 but was 'fp8e4m3'
            bench gemm --dtype half                   | Invalid value for option '--dtype': expected one of bf16, fp16, fp32 but was 'half'
            bench gemm --iters abc                    | Invalid value for option '--iters': 'abc' is not an int
            bench gemm --bogus                        | Unknown option: '--bogus'
            bench sweep --tokens 1023                 | --tokens: 1023 must be positive and divisible by --tp 2
            bench sweep --models gpt5                 | --models: unknown model 'gpt5'; models: llama3-8b, llama3-70b
            bench sweep --rs-methods ring:zz=1        | --methods: 'ring:zz=1': method 'ring' has no option 'zz'
            bench ce --sizes 3                        | --sizes: 3 must be an even number of bytes, 2..4 GiB
            plan --op xx --shape 8,8,8                | --op: unknown collective 'xx' (expected ag or rs)
            plan --op rs --shape 9,8,8                | --shape: m=9 is not divisible by tp=2
            """)
    void badInputIsOneSentenceNamingTheOptionWithExitTwo(String args, String message) {
        Ubuf result = Ubuf.run(args.trim().split(" "));
        assertEquals(2, result.exitCode(), result::toString);
        assertTrue(result.err().contains(message), () -> "no '" + message + "' in:\n" + result);
        assertTrue(result.err().contains("--help' for its options"), result::toString);
        assertNoGpuWork(result);
    }

    @Test
    void aggregateWithAnOddTpIsRefusedNamingTheMethod() {
        Ubuf result = Ubuf.run("bench", "ag", "--tp", "3", "--shapes", "3072,64,64", "--methods", "aggregate");
        assertEquals(2, result.exitCode(), result::toString);
        assertTrue(result.err().contains("--methods: 'aggregate' cannot run M=3072 K=64 N=64 with --tp 3: aggregate"
                + " pairs ranks and needs an even tp"), result::toString);
        assertNoGpuWork(result);
    }

    @Test
    void anUnknownBenchmarkGetsASuggestion() {
        Ubuf result = Ubuf.run("bench", "agg");
        assertEquals(2, result.exitCode(), result::toString);
        assertTrue(result.err().contains("Did you mean: bench ag?"), result::toString);
    }

    @Test
    void fp8GemmInputGetsPastTheChecksAndListsTheSweepShapes() {
        Ubuf run = Ubuf.run("bench", "gemm", "--fp8", "fast", "--m", "64", "--n", "64", "--k", "64", "--iters", "1");
        assertFalse(run.err().startsWith("ubuf bench gemm: --"), run::toString);
        Ubuf list = Ubuf.run("bench", "gemm", "--fp8", "split", "--from-sweep", "--list-shapes");
        assertEquals(0, list.exitCode(), list::toString);
        assertTrue(list.out().startsWith("gemm:"), list::toString);
    }

    @Test
    void validInputGetsPastTheChecks() {
        Ubuf result = Ubuf.run("bench", "gemm", "--m", "64", "--n", "64", "--k", "64", "--warmup", "0", "--iters", "1");
        assertFalse(result.err().startsWith("ubuf bench gemm: --"), result::toString);
        assertFalse(result.err().contains("Invalid value"), result::toString);
    }

    /** Output that came from the checks, not from a GPU run (which on a machine without one says so first). */
    static void assertNoGpuWork(Ubuf result) {
        assertFalse(result.err().contains("no CUDA driver") || result.err().contains("no usable GPU")
                || result.err().contains("CUDA_ERROR"), result::toString);
        assertEquals("", result.out(), result::toString);
    }
}
