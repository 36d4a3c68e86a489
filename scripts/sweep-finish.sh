#!/usr/bin/env bash
# Turns what the sweep's GPU calls returned (scripts/sweep-calls.sh: sweep-tp2.tgz, sweep-tp4.tgz, and the FP8
# subset's sweep-tp2-fp8.tgz, sweep-tp4-fp8.tgz) into results:
#   bash scripts/sweep-finish.sh DIR COMMIT
# DIR holds the packs (any of them, a SWEEP_GRAPH=1 pack sweep-tp<N>-graph.tgz or sweep-tp<N>-fp8-graph.tgz too; an
# FP8 pack's tp<N>-fp8/ and sweep-tp<N>-fp8.json go beside the others, its table is its own and never compared with
# PyTorch's bf16 baseline); COMMIT is the bundle's commit, which every ubuf round file must name. Makes
# bench/results/<date>-<gpu>x<count>-sweep-<COMMIT>/ (date from the files, gpu and count from the device and
# nvidia-smi -L) with, per tp, tp<N>/ (every round file, the warm-up, log.txt, rounds.txt, calls.txt, node.txt,
# dmon.txt, the node's report, cache/: the planner's choices and the GEMM tuning), sweep-tp<N>.json (the rounds
# combined by scripts/combine-rounds.py; its report, with issue 10's criteria and misses, in tp<N>/combined-report.txt;
# the planner's own times against the rounds', scripts/plan-vs-sweep.py, in tp<N>/plan-vs-sweep.txt; where auto's
# time above the ideal goes, scripts/sweep-slack.py, in tp<N>/slack.txt),
# sweep-tp<N>.png (bin/ubuf bench chart; SWEEP_CHART=0 skips it) and a README.md; then adds a section with one
# `<!-- results-tables: --sweep ... -->` block per tp to docs/results.md (after the Llama-3-8B sweep; once) and
# regenerates the page's tables (scripts/results-tables.py --update). Commits nothing: it ends by printing what to
# review, write (the section's reading of the numbers, README's headline rows) and commit.
# SWEEP_FINISH_FORCE=1 replaces an existing folder; SWEEP_FINISH_ROOT (default: this repository) is where it writes.
set -euo pipefail
if [ $# -ne 2 ]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit 2
fi
dir=$1 commit=$2
root=${SWEEP_FINISH_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
# A pack per label: tp2, tp4 (bf16 against PyTorch), tp2-fp8, tp4-fp8 (sweep-calls.sh tpN fp8: ubuf alone),
# tp2-graph, tp4-graph (SWEEP_GRAPH=1: ubuf timed as CUDA graph replays, against PyTorch eager) and tp2-fp8-graph,
# tp4-fp8-graph (SWEEP_GRAPH=1 sweep-calls.sh tpN fp8: the FP8 subset as replays, ubuf alone).
labels="2 4 2-fp8 4-fp8 2-graph 4-graph 2-fp8-graph 4-fp8-graph"
packs=()
for tp in $labels; do [ -f "$dir/sweep-tp$tp.tgz" ] && packs+=("$dir/sweep-tp$tp.tgz"); done
[ ${#packs[@]} -gt 0 ] || { echo "sweep-finish: no sweep-tp2.tgz, sweep-tp4.tgz or their -fp8 packs in $dir" >&2; exit 2; }
[[ "$commit" =~ ^[0-9a-f]{7,40}$ ]] || { echo "sweep-finish: COMMIT is a commit hash, got '$commit'" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for p in "${packs[@]}"; do tar xzf "$p" -C "$tmp"; done

# Date, device and commit from the files; the folder's name.
name=$(python3 - "$tmp" "$commit" <<'EOF'
import glob, json, os, re, sys
tmp, commit = sys.argv[1], sys.argv[2]
dates, devices, commits = set(), set(), set()
for path in glob.glob(os.path.join(tmp, "sweep-tp*", "sweep-r*.json")):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"sweep-finish: {path}: {e} (left out)", file=sys.stderr)
        continue
    dates.add(doc.get("date")); devices.add(doc.get("device", "")); commits.add(doc.get("commit", "unknown"))
if not dates:
    sys.exit("sweep-finish: no readable ubuf round file (sweep-r*.json) in the packs")
bad = sorted(c for c in commits if not (c.startswith(commit) or commit.startswith(c)))
if bad:
    sys.exit(f"sweep-finish: the files name commit {', '.join(bad)}, not {commit}")
gpus = sorted({m.group(1).lower() for d in devices for m in [re.search(r"\b([HAB]\d{2,3})\b", d)] if m})
count = 0
for node in glob.glob(os.path.join(tmp, "sweep-tp*", "node.txt")):
    with open(node) as f:
        # nvidia-smi -L lines ("GPU 0: NVIDIA ..."), distinct indices: the file holds the list twice, and -q's
        # "GPU 00000000:00:06.0" headers are bus ids, not indices.
        count = max(count, len(set(re.findall(r"^GPU (\d{1,2}): ", f.read(), re.M))))
if not count:
    count = max(int(re.match(r"(\d+)x", d).group(1)) for d in devices if re.match(r"(\d+)x", d))
print(f"{max(dates)}-{'-'.join(gpus) or 'gpu'}x{count}-sweep-{commit}")
EOF
)
dest="$root/bench/results/$name"
rel="bench/results/$name"
if [ -e "$dest" ]; then
  if [ "${SWEEP_FINISH_FORCE:-0}" != 1 ]; then
    echo "sweep-finish: $rel exists (SWEEP_FINISH_FORCE=1 replaces it)" >&2
    exit 1
  fi
  rm -rf "$dest"
fi
mkdir -p "$dest"
tps=()
for tp in $labels; do
  src="$tmp/sweep-tp$tp"
  [ -d "$src" ] || continue
  tps+=("$tp")
  mkdir -p "$dest/tp$tp"
  (cd "$src" && find . -maxdepth 1 -type f ! -name '*.partial' -exec cp {} "$dest/tp$tp/" \;)
  if [ -d "$src/cache" ]; then
    mkdir -p "$dest/tp$tp/cache"
    find "$src/cache" -type f \( -name '*.properties' -o -name '*.tsv' \) -exec cp {} "$dest/tp$tp/cache/" \;
  fi
  rounds=$(cd "$dest/tp$tp" && ls sweep-r*.json torch-sweep-r*.json 2>/dev/null || true)
  if [ -z "$rounds" ]; then echo "sweep-finish: tp $tp has no round files" >&2; continue; fi
  # shellcheck disable=SC2086 # one file name per word
  (cd "$dest/tp$tp" && python3 "$root/scripts/combine-rounds.py" --out "../sweep-tp$tp.json" $rounds) \
    > "$dest/tp$tp/combined-report.txt"
  # The planner's own times of its candidates (the warm-up pass's auto records) against the rounds' times of them,
  # and, with two or more ubuf rounds, the rounds against each other on the same candidates (the noise floor).
  if [ -f "$dest/tp$tp/warmup.json" ]; then
    ubuf_rounds=$(cd "$dest/tp$tp" && ls sweep-r*.json 2>/dev/null | sed "s|^|$dest/tp$tp/|")
    [ "$(echo "$ubuf_rounds" | grep -c .)" -ge 2 ] || ubuf_rounds=""
    # shellcheck disable=SC2086 # one file name per word
    python3 "$root/scripts/plan-vs-sweep.py" "$dest/tp$tp/warmup.json" "$dest/sweep-tp$tp.json" $ubuf_rounds \
      > "$dest/tp$tp/plan-vs-sweep.txt" || echo "sweep-finish: plan-vs-sweep.py failed for tp $tp" >&2
  fi
  # Where auto's time above the ideal goes: chunk GEMMs against the rest, by regime (scripts/sweep-slack.py).
  (cd "$root" && python3 scripts/sweep-slack.py --rows "$rel/sweep-tp$tp.json") > "$dest/tp$tp/slack.txt" \
    || { rm -f "$dest/tp$tp/slack.txt"; echo "sweep-finish: sweep-slack.py failed for tp $tp" >&2; }
  if [ "${SWEEP_CHART:-1}" != 0 ]; then
    (cd "$root" && bin/ubuf bench chart --in "$rel/sweep-tp$tp.json" --png "$rel/sweep-tp$tp.png" > /dev/null 2>&1) \
      || echo "sweep-finish: no chart for tp $tp (bin/ubuf bench chart failed; build first or SWEEP_CHART=0)" >&2
  fi
done
[ ${#tps[@]} -gt 0 ] || { echo "sweep-finish: nothing to combine" >&2; exit 1; }

# The folder's README and the docs section.
python3 - "$root" "$rel" "$commit" "${tps[@]}" <<'EOF'
import json, os, re, subprocess, sys, textwrap
root, rel, commit, tps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
dest = os.path.join(root, rel)
docs = {tp: json.load(open(os.path.join(dest, f"sweep-tp{tp}.json"))) for tp in tps if
        os.path.exists(os.path.join(dest, f"sweep-tp{tp}.json"))}
any_doc = next(iter(docs.values()))
device = any_doc.get("device", "-")
date = any_doc.get("date", "-")
gpu = re.search(r"\b([HAB]\d{2,3})\b", device)
gpu = gpu.group(1) if gpu else "GPU"
count = re.search(r"x(\d+)-sweep-", rel).group(1)


def tables(tp):
    out = subprocess.run([sys.executable, os.path.join(root, "scripts", "results-tables.py"), "--sweep",
                          os.path.join(dest, f"sweep-tp{tp}.json")], capture_output=True, text=True, check=True)
    return out.stdout


def wrap(text):
    return textwrap.fill(text, 116, break_long_words=False, break_on_hyphens=False)


def title(tp):
    """'2' -> 'tp 2'; '2-fp8' -> 'tp 2, FP8 operands (...)'; '2-graph' -> 'tp 2, ubuf timed as CUDA graph replays
    (...)'; '2-fp8-graph' -> both."""
    n, *modes = tp.split("-")
    if modes == ["graph"]:
        return f"tp {n}, ubuf timed as CUDA graph replays (SWEEP_GRAPH=1, bench sweep --cuda-graph; PyTorch eager)"
    if modes == ["fp8", "graph"]:
        return (f"tp {n}, FP8 operands, ubuf timed as CUDA graph replays (SWEEP_GRAPH=1 sweep-calls.sh tp{n} fp8: "
                "ubuf alone, no PyTorch)")
    return f"tp {n}" + (", FP8 operands (sweep-calls.sh tp" + n + " fp8: ubuf alone, no PyTorch)" if modes else "")


def command(tp):
    """The sweep-calls.sh line that made label tp's pack ('4-fp8-graph' -> SWEEP_GRAPH=1 ... tp4 fp8)."""
    n, *modes = tp.split("-")
    return (("SWEEP_GRAPH=1 " if "graph" in modes else "") + f"bash .gpu/sweep-calls.sh tp{n}"
            + (" fp8" if "fp8" in modes else ""))


def what_ran(tp):
    """One label's rounds in a sentence: bf16 against PyTorch, or the FP8 subset alone."""
    modes = tp.split("-")[1:]
    timed = "ubuf timed as CUDA graph replays" if "graph" in modes else "ubuf issued call by call"
    if "fp8" in modes:
        return (f"{command(tp)}: the FP8 subset, E4M3 operands with bf16 output and partial sums at M = 4096-16384, "
                f"{timed}, ubuf alone (PyTorch's baseline has no FP8 mode), its rounds back to back")
    return (f"{command(tp)}: bf16, {timed}, alternating with the PyTorch baseline (NCCL + torch.matmul, "
            "async-TP; eager) round by round")


lines = [f"# The model-shape sweep at {', '.join(title(tp) for tp in tps)}, {count}x {gpu}, {date}, {commit}", "",
         wrap("One GPU call per label on a "
         f"{count}-GPU node (tp 2 on GPUs 0,1; tp 4 on all four, in a later call): "
         + "; ".join("`{}`: {}".format(*what_ran(tp).split(": ", 1)) for tp in tps) + ". Each call ran a warm-up "
         "pass of `ubuf bench sweep --iters 1 --warmup 0` (the planner measures and picks a method per shape, every "
         "GEMM kind is tuned, into the call's own caches: `tpN/cache/`), then its rounds: `ubuf bench sweep` (every "
         "method, the planner's cached choice as auto, NCCL sequential; shuffled interleaved iterations, max over "
         "ranks) and, for the bf16 labels, `torch_baseline.py` under torchrun on as many processes as tp between "
         "them, A B A B. "
         "`nvidia-smi dmon -s pucv` sampled every GPU each second (`tpN/dmon.txt`); `tpN/node.txt` has clocks and "
         "power before and after."), ""]
for tp in tps:
    d = docs.get(tp)
    if not d:
        continue
    calls = os.path.join(dest, f"tp{tp}", "calls.txt")
    lines += [f"## {title(tp)}", "",
              f"- Device: {d.get('device')}; PyTorch {d.get('torch', '-')}, CUDA {d.get('cuda', '-')}.",
              f"- Rounds: ubuf {d['rounds']['ubuf']}, PyTorch {d['rounds']['torch']} "
              f"(files: {', '.join(d.get('sources', []))}).",
              f"- Combined: [sweep-tp{tp}.json](sweep-tp{tp}.json) (scripts/combine-rounds.py; its report with "
              f"issue 10's criteria: [tp{tp}/combined-report.txt](tp{tp}/combined-report.txt)"
              + (f"; the planner's own times against the rounds': [tp{tp}/plan-vs-sweep.txt](tp{tp}/plan-vs-sweep.txt)"
                 if os.path.exists(os.path.join(dest, f"tp{tp}", "plan-vs-sweep.txt")) else "")
              + (f"; where auto's time above the ideal goes: [tp{tp}/slack.txt](tp{tp}/slack.txt)"
                 if os.path.exists(os.path.join(dest, f"tp{tp}", "slack.txt")) else "") + ")"
              + (f"; chart: [sweep-tp{tp}.png](sweep-tp{tp}.png)." if os.path.exists(
                  os.path.join(dest, f"sweep-tp{tp}.png")) else ".")]
    if d.get("failures"):
        lines.append(f"- PyTorch failures: {len(d['failures'])} (first: {d['failures'][0]})")
    if os.path.exists(calls):
        lines += ["", "What the call did (`tp%s/calls.txt`):" % tp, "", "```"]
        lines += [l.rstrip() for l in open(calls)]
        lines += ["```"]
    summary = [l for l in tables(tp).splitlines() if l.startswith("auto within 2%")]
    lines += [""] + [wrap(x) for x in summary] + [""]
lines += ["The tables: [docs/results.md](../../../docs/results.md).", ""]
with open(os.path.join(dest, "README.md"), "w") as f:
    f.write("\n".join(lines))

page = os.path.join(root, "docs", "results.md")
with open(page) as f:
    text = f.read()
if f"--sweep {rel}/" not in text:
    section = [f"## Model-shape sweep, {', '.join(title(tp) for tp in tps)} ({count}x {gpu}, {date})", "",
               wrap(f"At {commit} ([what ran](../{rel}/README.md)): "
               + "; ".join(f"`{what_ran(tp).split(': ', 1)[0]}` ({what_ran(tp).split(': ', 1)[1]})" for tp in tps)
               + ". `ubuf bench sweep` on Llama-3-8B, Llama-3-70B, Qwen2.5-32B and GPT-3-175B (bf16 also M = 256 "
               "and 512 on the first; Mixtral-8x7B's expert FC1 and FC2 are Llama-3-8B's shapes, so its rows are "
               "those), every method and the planner's choice, after a warm-up pass in which the planner chose; "
               "medians over the rounds. \"fastest other\" is the fastest of the other methods and NCCL sequential "
               "measured in the same iterations; \"auto / fastest\" the median over rounds of that round's ratio."),
               ""]
    for tp in tps:
        section += [f"<!-- results-tables: --sweep {rel}/sweep-tp{tp}.json -->", "<!-- /results-tables -->", ""]
    anchor = "\n## The layer demo\n"
    block = "\n".join(section) + "\n"
    text = text.replace(anchor, "\n" + block + anchor[1:], 1) if anchor in text else text.rstrip("\n") + "\n\n" + block
    with open(page, "w") as f:
        f.write(text)
EOF
python3 "$root/scripts/results-tables.py" --update "$root/docs/results.md"
echo
for tp in "${tps[@]}"; do
  echo "== tp $tp: $rel/sweep-tp$tp.json"
  grep -E '^(PASS|FAIL|NOT MEASURED)' "$dest/tp$tp/combined-report.txt" || true
  python3 "$root/scripts/results-tables.py" --sweep "$dest/sweep-tp$tp.json" | grep '^auto within 2%' || true
done
echo
echo "Written: $rel/ ($(du -sh "$dest" | cut -f1)) and docs/results.md's new section. Next: read the tables, write the"
echo "section's reading of the numbers (docs/results.md) and README's headline rows, then:"
echo "  git add $rel docs/results.md && git commit -m 'Results: the model-shape sweep at tp ${tps[*]}, $name'"
