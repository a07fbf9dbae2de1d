#!/usr/bin/env bash
# Issue 20 section 4, one libreyolo on the PATH: commands other than `profile` and `jobs` are
# handed to the Python LibreYOLO's CLI with argv, stdin, stdout, stderr and exit code unchanged,
# skipping this binary (and copies of it) earlier on PATH. The "Python CLIs" here are shell
# scripts that print what they got; with a second argument (the project's Python environment)
# the real Python LibreYOLO's libreyolo is reached too.
#   python_handoff_test.sh <our libreyolo> [<python env>]
set -u
ours="$(realpath "$1")"
pyenv="${2:-}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok:   $1"; }
bad() { echo "FAIL: $1"; fail=1; }
expect_eq() {  # expect_eq <what> <got> <want>
  if [ "$2" == "$3" ]; then ok "$1"; else bad "$1: got [$2], want [$3]"; fi
}

# A fake Python CLI: its name, then each argument on a line in brackets, then stdin; a line on
# stderr; exits with $FAKE_EXIT (default 0). `--version` prints "fake-libreyolo 9.9.9".
make_fake() {  # make_fake <dir> <name>
  mkdir -p "$1"
  cat >"$1/libreyolo" <<FAKE
#!/usr/bin/env bash
if [ "\${1:-}" == "--version" ]; then echo "fake-libreyolo 9.9.9"; exit 0; fi
echo "fake:$2"
for a in "\$@"; do echo "[\$a]"; done
echo "stdin:\$(cat)"
echo "to stderr" >&2
exit "\${FAKE_EXIT:-0}"
FAKE
  chmod +x "$1/libreyolo"
}

mkdir -p "$tmp/ours" "$tmp/copy" "$tmp/empty"
ln -s "$ours" "$tmp/ours/libreyolo"          # our binary first on PATH (a symlink to it)
cp "$ours" "$tmp/copy/libreyolo"             # and a copy of it (another inode)
make_fake "$tmp/py" py
make_fake "$tmp/override" override
base_path="/usr/bin:/bin"

# 1. argv, stdin, stdout, stderr and the exit code pass through; our own binary is skipped.
out="$(printf 'line one\nline two' | FAKE_EXIT=7 PATH="$tmp/ours:$tmp/py:$base_path" \
       libreyolo train data="my set.yaml" '' --epochs 3 'a*b' 2>"$tmp/err")"
code=$?
expect_eq "exit code passes through" "$code" 7
want="$(printf 'fake:py\n[train]\n[data=my set.yaml]\n[]\n[--epochs]\n[3]\n[a*b]\nstdin:line one\nline two')"
expect_eq "argv and stdin pass through" "$out" "$want"
expect_eq "stderr passes through" "$(cat "$tmp/err")" "to stderr"

# 2. A copy of our binary first on PATH hands over to the next, which skips both copies.
out="$(PATH="$tmp/copy:$tmp/ours:$tmp/py:$base_path" libreyolo predict x </dev/null 2>/dev/null)"
expect_eq "a copy of ours earlier on PATH is skipped" "$(head -2 <<<"$out" | tr '\n' ' ')" \
  "fake:py [predict] "

# 3. LIBREYOLO_PYTHON_CLI wins over PATH.
out="$(LIBREYOLO_PYTHON_CLI="$tmp/override/libreyolo" PATH="$tmp/ours:$tmp/py:$base_path" \
       libreyolo val </dev/null 2>/dev/null)"
expect_eq "LIBREYOLO_PYTHON_CLI is used" "$(head -1 <<<"$out")" "fake:override"

# 4. Our own commands stay ours.
PATH="$tmp/ours:$tmp/py:$base_path" libreyolo profile >"$tmp/out" 2>&1
expect_eq "profile is ours" "$(grep -c '^subcommands:' "$tmp/out")" 1

# 5. --version names both.
out="$(PATH="$tmp/copy:$tmp/ours:$tmp/py:$base_path" libreyolo --version)"
code=$?
expect_eq "--version exits 0" "$code" 0
grep -q '^libreyolo [0-9].*libreyolo-profiler' <<<"$out" && ok "--version names ours" ||
  bad "--version names ours: $out"
grep -q "^Python LibreYOLO fake-libreyolo 9.9.9 ($tmp/py/libreyolo)" <<<"$out" &&
  ok "--version names the Python tool's" || bad "--version names the Python tool's: $out"

# 6. Without the Python tool: a clear message, how to install it, exit 2; no recursion.
PATH="$tmp/copy:$tmp/ours:$tmp/empty" libreyolo train </dev/null >"$tmp/out" 2>"$tmp/err"
code=$?
expect_eq "no Python tool: exit 2" "$code" 2
grep -q "'train' goes to the Python LibreYOLO" "$tmp/err" && grep -q "pip install libreyolo" \
  "$tmp/err" && grep -q LIBREYOLO_PYTHON_CLI "$tmp/err" && ok "no Python tool: the message" ||
  bad "no Python tool: the message: $(cat "$tmp/err")"
[ -s "$tmp/out" ] && bad "no Python tool: wrote to stdout"
out="$(PATH="$tmp/ours:$tmp/empty" libreyolo --version)"
grep -q "^Python LibreYOLO: not found" <<<"$out" && ok "--version says not found" ||
  bad "--version says not found: $out"
LIBREYOLO_PYTHON_CLI="$tmp/copy/libreyolo" PATH="$tmp/ours:$tmp/py:$base_path" \
  libreyolo train </dev/null >/dev/null 2>"$tmp/err"
code=$?
expect_eq "LIBREYOLO_PYTHON_CLI naming ours: exit 2" "$code" 2
grep -q "is this libreyolo" "$tmp/err" && ok "LIBREYOLO_PYTHON_CLI naming ours: the message" ||
  bad "LIBREYOLO_PYTHON_CLI naming ours: $(cat "$tmp/err")"

# 7. The real Python LibreYOLO of the project's environment.
if [ -n "$pyenv" ]; then
  real_path="$tmp/ours:$pyenv/bin:$base_path"
  PATH="$real_path" libreyolo formats </dev/null >"$tmp/out" 2>"$tmp/err"
  code=$?
  expect_eq "real: libreyolo formats exits 0" "$code" 0
  grep -q "Supported export formats" "$tmp/out" && grep -q torchscript "$tmp/out" &&
    ok "real: libreyolo formats is the Python tool's" || bad "real: formats: $(cat "$tmp/out" "$tmp/err")"
  PATH="$real_path" libreyolo no-such-command </dev/null >/dev/null 2>"$tmp/err"
  code=$?
  expect_eq "real: the Python tool's own exit code" "$code" 2
  grep -q "No such command 'no-such-command'" "$tmp/err" && ok "real: its own stderr" ||
    bad "real: its own stderr: $(cat "$tmp/err")"
  out="$(PATH="$real_path" libreyolo --version)"
  grep -q "^Python LibreYOLO 1.6.0 ($pyenv/bin/libreyolo)" <<<"$out" && ok "real: --version" ||
    bad "real: --version: $out"
fi
exit $fail
