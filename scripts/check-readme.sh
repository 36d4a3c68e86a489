#!/usr/bin/env bash
# Keeps README.md honest: runs every command it shows, compiles its Java example and checks the docs' links.
# Called by .ci/run after the build (it needs bench/target); run it by hand the same way: bash scripts/check-readme.sh
#
# Commands: every line of README's ```bash blocks (a trailing `\` joins lines; `# ...` after the command is a comment).
#   - `bin/ubuf ...` and `bin/ubuf-launch ...` run as shown, from a scratch folder that links to this repository's
#     top-level entries (so files they write, like sweep.png, land there), and must exit 0 within CMD_TIMEOUT_S.
#   - A command whose comment says `GPU only` needs GPUs to run. It runs with `--help` appended instead, which must
#     exit 0, and every `--option` it shows must appear in that help, so a renamed option or command fails here.
#   - README's test command (`mvn -B verify`) is not run again: .ci/run must contain it as a line of its own (CI
#     has just run it).
#   - Any other command fails the check: teach this script how to run it, or show it outside a ```bash block.
# Java: README's ```java block is compiled (javac of a JDK 25, against bench/target/lib) inside a method, with the
#   imports that README names.
# Links: every relative link of README.md, docs/*.md and the modules' README.md files must name an existing file,
#   and a #fragment into a markdown file one of its headings. Links into examples/, which comes from another branch,
#   only warn while examples/ does not exist.
# Exit 0 when all pass; 1 otherwise, with every failure listed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readme="$root/README.md"
timeout_s=${CMD_TIMEOUT_S:-300}
failures=()
fail() { failures+=("$1"); echo "FAIL: $1" >&2; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for e in "$root"/* "$root"/.ci; do ln -s "$e" "$scratch/$(basename "$e")"; done

# --- commands of the ```bash blocks -------------------------------------------------------------------------------
commands=$(awk '
  /^```bash[[:space:]]*$/ { inblock = 1; next }
  /^```/ { inblock = 0; next }
  inblock {
    line = $0
    if (cont != "") { line = cont " " line; cont = "" }
    if (line ~ /\\[[:space:]]*$/) { sub(/\\[[:space:]]*$/, "", line); cont = line; next }
    print line
  }' "$readme")
test_command=$(grep -E '^[[:space:]]*mvn ' <<<"$commands" | head -1 | sed -E 's/[[:space:]]+#.*$//; s/^[[:space:]]+//; s/[[:space:]]+$//')
ran=0
while IFS= read -r raw; do
  line=$(sed -E 's/^[[:space:]]+//' <<<"$raw")
  [ -z "$line" ] && continue
  [[ "$line" == \#* ]] && continue
  comment=""
  cmd="$line"
  if [[ "$line" =~ ^(.*[^[:space:]])[[:space:]]+#[[:space:]](.*)$ ]]; then
    cmd="${BASH_REMATCH[1]}"
    comment="${BASH_REMATCH[2]}"
  fi
  case "$cmd" in
    "$test_command")
      if sed -E 's/^[[:space:]]+//; s/[[:space:]]+$//' "$root/.ci/run" | grep -qxF -- "$cmd"; then
        echo "ok: '$cmd' is README's test command and .ci/run runs it"
      else
        fail "README's test command '$cmd' is not a line of .ci/run"
      fi
      ;;
    bin/ubuf\ *|bin/ubuf|bin/ubuf-launch\ *|bin/ubuf-launch)
      ran=$((ran + 1))
      if [[ "$comment" == *"GPU only"* ]]; then
        out=$(cd "$scratch" && timeout "$timeout_s" bash -c "$cmd --help" 2>&1)
        rc=$?
        if [ $rc -ne 0 ]; then
          fail "'$cmd --help' exited $rc: $(tail -3 <<<"$out")"
          continue
        fi
        missing=""
        for opt in $(grep -oE -- '(^|[[:space:]])--[a-z0-9][a-z0-9-]*' <<<"$cmd" | tr -d ' \t'); do
          grep -qE -- "(^|[^a-z0-9-])${opt}([^a-z0-9-]|$)" <<<"$out" || missing="$missing $opt"
        done
        if [ -n "$missing" ]; then
          fail "'$cmd': its --help does not list$missing"
        else
          echo "ok: $cmd   (GPU only: --help lists every option shown)"
        fi
      else
        start=$SECONDS
        out=$(cd "$scratch" && timeout "$timeout_s" bash -c "$cmd" 2>&1)
        rc=$?
        if [ $rc -ne 0 ]; then
          fail "'$cmd' exited $rc: $(tail -5 <<<"$out")"
        else
          echo "ok: $cmd   ($((SECONDS - start)) s)"
        fi
      fi
      ;;
    *)
      fail "README shows '$cmd', which scripts/check-readme.sh does not know how to run"
      ;;
  esac
done <<<"$commands"
[ -n "$test_command" ] || fail "README shows no 'mvn ...' test command in a \`\`\`bash block"
[ $ran -gt 0 ] || fail "README shows no bin/ubuf command in a \`\`\`bash block"

# --- the Java example ------------------------------------------------------------------------------------------------
java_block=$(awk '/^```java[[:space:]]*$/ { n++; inblock = (n == 1); next } /^```/ { inblock = 0 } inblock' "$readme")
if [ -n "$java_block" ]; then
  if jdk=$(bash "$root/scripts/find-jdk25.sh" 2>/dev/null) && [ -x "$jdk/bin/javac" ]; then
    mkdir -p "$scratch/java/src" "$scratch/java/out"
    # README names its imports as "imports: `dev.ubuf.{a,b}`, `dev.ubuf.x.{c,d}`": every package becomes p.*
    imports=$(grep -oE 'imports: .*' "$readme" | head -1 | grep -oE '`[a-z.]+(\{[a-z,]+\})?`' | tr -d '`' |
      while read -r spec; do
        if [[ "$spec" =~ ^([a-z.]+)\.\{([a-z,]+)\}$ ]]; then
          for p in ${BASH_REMATCH[2]//,/ }; do echo "import ${BASH_REMATCH[1]}.$p.*;"; done
        else
          echo "import $spec.*;"
        fi
      done)
    {
      echo "$imports"
      echo "import java.nio.file.Path;"
      echo "import java.util.List;"
      echo "class ReadmeExample {"
      echo "    static void example() throws Exception {"
      echo "$java_block"
      echo "    }"
      echo "}"
    } >"$scratch/java/src/ReadmeExample.java"
    if out=$("$jdk/bin/javac" -proc:none -cp "$root/bench/target/lib/*" -d "$scratch/java/out" \
        "$scratch/java/src/ReadmeExample.java" 2>&1); then
      echo "ok: README's Java example compiles ($(wc -l <<<"$java_block") lines)"
    else
      fail "README's Java example does not compile against bench/target/lib:
$out"
    fi
  else
    fail "no JDK 25 with javac to compile README's Java example"
  fi
fi

# --- links -----------------------------------------------------------------------------------------------------------
# GitHub's heading anchors: lower case, punctuation dropped (but - and _), spaces to -.
anchors() { grep -E '^#{1,6} ' "$1" | sed -E 's/^#+ +//; s/[[:space:]]+$//' | tr 'A-Z' 'a-z' |
  sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'; }
pages=("$readme" "$root"/docs/*.md "$root"/*/README.md)
links=0
for page in "${pages[@]}"; do
  [ -f "$page" ] || continue
  dir=$(dirname "$page")
  while IFS= read -r target; do
    [ -z "$target" ] && continue
    case "$target" in http://*|https://*|mailto:*) continue ;; esac
    links=$((links + 1))
    path="${target%%#*}"
    frag=""
    [[ "$target" == *"#"* ]] && frag="${target#*#}"
    [ -z "$path" ] && file="$page" || file="$dir/$path"
    rel="${page#"$root"/}"
    if [ ! -e "$file" ]; then
      if [[ "$(realpath -m "$file")" == "$root/examples/"* ]] && [ ! -d "$root/examples" ]; then
        echo "warning: $rel links to $target; examples/ is not on this branch yet" >&2
      else
        fail "$rel: link to $target: no such file"
      fi
      continue
    fi
    # grep reads every anchor (no -q): quitting at the first match would cut the pipe, and pipefail would count the
    # writer's broken pipe as a miss once a page's anchors outgrow the pipe's buffer.
    if [ -n "$frag" ] && [[ "$file" == *.md ]] && ! anchors "$file" | grep -xF -- "$frag" > /dev/null; then
      fail "$rel: link to $target: no heading with that anchor"
    fi
  done < <(grep -oE '\]\([^) ]+\)' "$page" | sed -E 's/^\]\(//; s/\)$//')
done
echo "ok: $links relative links checked"

if [ ${#failures[@]} -gt 0 ]; then
  echo "check-readme: ${#failures[@]} failure(s)" >&2
  exit 1
fi
echo "check-readme: README's commands, Java example and links all check out"
