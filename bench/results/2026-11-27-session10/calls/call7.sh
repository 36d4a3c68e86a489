#!/usr/bin/env bash
# Session 10 call 7 (4 GPUs) at d6507d2: the eager 8B tp 4 demo's hang (call 5: 1 of 2, call 6: 1 of 4; rank 0's
# host inside cuMemcpyAsync, the other ranks spinning inside ncclAllReduce). Runs it until it hangs (at most ~250 s);
# on a hang: the JVM's thread dump, each thread's kernel wait channel and, where gdb exists, native backtraces.
set -u
O=$OUT; B=$(cd "$(dirname "$0")" && pwd); start=$SECONDS
bash $B/java.sh -version > /dev/null 2>&1
M8="--hidden 4096 --ffn 14336 --swiglu --tokens 8192"
mkdir -p $O/demo
(command -v gdb; command -v eu-stack; id) > $O/tools.txt 2>&1
hung=0
demo() { # NAME LIMIT ARGS...
  local n=$1 lim=$2; shift 2
  CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 $lim bash $B/java.sh -cp "$B/lib/*" dev.ubuf.cli.UbufCli demo "$@" --out $O/demo/$n.json > $O/demo/$n.txt 2>&1 &
  local pid=$! last=-1 same=0 dumped=0 f=$O/demo/$n.txt
  while kill -0 $pid 2>/dev/null; do
    sleep 3
    local size=$(stat -c %s $f 2>/dev/null || echo 0)
    if [ "$size" = "$last" ]; then same=$((same+3)); else same=0; last=$size; fi
    if [ $same -ge 15 ] && [ $dumped -eq 0 ]; then
      for j in $(pgrep -f "$n.json"); do
        [ "$(cat /proc/$j/comm 2>/dev/null)" = java ] || continue
        kill -3 $j
        for t in /proc/$j/task/*; do echo "$(basename $t) $(cat $t/comm) $(cat $t/wchan 2>/dev/null) $(cat $t/stat | cut -d' ' -f3)"; done > $O/demo/$n-wchan.txt
        command -v gdb > /dev/null && timeout 30 gdb -p $j -batch -ex "thread apply all bt 12" > $O/demo/$n-gdb.txt 2>&1
      done
      dumped=1; hung=1; echo "$n: no output for 15 s at t=$((SECONDS-start)): dumps" >> $O/times.txt
    fi
  done
  wait $pid
  echo "demo $n rc=$? t=$((SECONDS-start))" >> $O/times.txt
}
for r in 1 2 3 4 5 6 7 8 9 10; do
  [ $((SECONDS-start)) -gt 230 ] && break
  demo 8b-tp4-eager-r$r 40 --tp 4 $M8 --iters 20 --config $B/auto.yaml
  [ $hung = 1 ] && break
done
cat $O/tools.txt $O/times.txt
for f in $O/demo/*-wchan.txt; do echo "== $f"; grep -v " S $\|futex_wait_queue [^R]" $f | head -5; awk '{print $3}' $f | sort | uniq -c; done 2>/dev/null
for f in $O/demo/*-gdb.txt; do echo "== $f"; grep -E "^Thread|#[0-9]" $f | grep -B2 -A10 -i "memcpy\|ncclAllReduce" | head -60; done 2>/dev/null
tar czf $O/call7.tgz -C $O tools.txt times.txt demo 2>/dev/null
rm -rf $O/demo
