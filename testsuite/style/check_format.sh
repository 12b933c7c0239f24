#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# check_format.sh — the project's one C style (HACKING.md, Style), defined by
# .clang-format at the top of the tree and held against every C file of the
# project's own: bbmgr/, src/, sim/, bench/*.c and testsuite/ (*.c, *.h).  Run by
# 'make check'; fails naming each file clang-format would change.
#
#   check_format.sh            check (HARMONIA_SRCDIR: the tree; default: ../..)
#   check_format.sh --fix      format those files in place
#   check_format.sh --list     print them, one per line (paths from the top)
#
# Formatters change their output between major versions: with a clang-format
# whose major version is not the one .clang-format names ("clang-format-major:"),
# the check skips (exit 77) and says why.  CLANG_FORMAT names the program.
src=${HARMONIA_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
config="$src/.clang-format"

# The files the style covers, from the top of the tree.
files() {
    (cd "$src" && find bbmgr src sim testsuite -name '*.[ch]' -type f &&
        find bench -maxdepth 1 -name '*.c' -type f) | LC_ALL=C sort
}

# The program, and whether its major version is the configuration's.
pick() {
    want=$(sed -n 's/^# clang-format-major: *\([0-9][0-9]*\).*/\1/p' "$config")
    [ -n "$want" ] || { echo "check_format.sh: $config names no clang-format-major"; exit 99; }
    cf=${CLANG_FORMAT:-}
    if [ -z "$cf" ]; then
        for c in clang-format-"$want" clang-format; do
            command -v "$c" >/dev/null 2>&1 && { cf=$c; break; }
        done
    fi
    if [ -z "$cf" ] || ! command -v "$cf" >/dev/null 2>&1; then
        echo "check_format.sh: clang-format is not installed (the style needs version $want): skipped"
        exit 77
    fi
    have=$("$cf" --version | sed -n 's/.*clang-format version \([0-9][0-9]*\)\..*/\1/p')
    if [ "$have" != "$want" ]; then
        echo "check_format.sh: $cf is version ${have:-unknown}, .clang-format is written for" \
             "version $want, whose output may differ: skipped"
        exit 77
    fi
}

# check DIR FILE...: the files (relative to DIR) clang-format would change, one per
# line on stdout; the status is 1 when there is one.
check() {
    dir=$1; shift
    bad=$(cd "$dir" && for f in "$@"; do
        "$cf" --style="file:$config" --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"
    done)
    [ -z "$bad" ] || { printf '%s\n' "$bad"; return 1; }
}

case "${1:-}" in
--list) files; exit 0 ;;
--fix)
    pick
    # shellcheck disable=SC2046
    (cd "$src" && "$cf" --style="file:$config" -i $(files)) || exit 1
    exit 0 ;;
"") ;;
*) echo "usage: check_format.sh [--fix | --list]"; exit 99 ;;
esac

pick
n=$(files | wc -l)
[ "$n" -gt 0 ] || { echo "check_format.sh: no C file under $src"; exit 99; }

# The check itself: a planted file with the style broken (tabs, braces, a cast
# spaced, a long line) must be refused and named; the same file formatted passes.
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
printf '%s\n' '#include <stdio.h>' '' 'int planted( int x ){' \
    '	if(x) { return ( int ) x; }' \
    '	printf("%d %d %d %d %d %d %d %d %d %d\n", x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x);' \
    '	return 0;}' >"$tmp/planted.c"
if out=$(check "$tmp" planted.c); then
    echo "check_format.sh: a misformatted file was not refused"
    exit 1
fi
[ "$out" = planted.c ] || { echo "check_format.sh: the planted file was not named: $out"; exit 1; }
"$cf" --style="file:$config" -i "$tmp/planted.c" && check "$tmp" planted.c >/dev/null ||
    { echo "check_format.sh: the planted file, formatted, is still refused"; exit 1; }
echo "check_format.sh: a misformatted file is refused and named"

# shellcheck disable=SC2046
if ! bad=$(check "$src" $(files)); then
    printf '%s\n' "$bad" | sed 's/^/check_format.sh: not in the style of .clang-format: /'
    echo "check_format.sh: $(printf '%s\n' "$bad" | wc -l) of $n files differ;" \
         "'testsuite/style/check_format.sh --fix' formats them (HACKING.md, Style)"
    exit 1
fi
echo "check_format.sh: $n files in the style of .clang-format ($cf $have)"
