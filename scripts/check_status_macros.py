#!/usr/bin/env python3
"""Hand-written early returns that repeat RETURN_IF_ERROR / ASSIGN_OR_RETURN (issue 39 §4).

A plain repeat is a status computed and returned at once, with nothing added:

  if (absl::Status s = F(); !s.ok()) return s;          ->  RETURN_IF_ERROR(F());
  if (auto r = G(); !r.ok()) { return r.status(); }     ->  RETURN_IF_ERROR(G().status());
  absl::StatusOr<T> x = G();                            ->  ASSIGN_OR_RETURN(T x, G());
  if (!x.ok()) return x.status();                           (then x, not *x / x->)

A return that adds context, maps the code, logs or cleans up is not one, nor a check of a status
gathered elsewhere (a thread's, a loop's, an out-parameter's). `auto s = ...; return s;` in a
file that uses grpc::Status is skipped: it may be one (the macros take absl statuses only).

  scripts/check_status_macros.py [--list] [--root DIR]

Counts the plain repeats and the macro uses per folder under common/, client/, wire/ and
server/. With --list, prints each repeat. Without it, also checks them against ALLOWED below (a
ratchet: the counts when the check came in) and exits 1 when a file holds more than its allowance,
naming each line and the macro to write instead. Counts below the allowance pass; lower the
row, or delete it at 0, when you convert a file.
"""
import argparse
import collections
import os
import re
import sys

ROOTS = ('common', 'client', 'wire', 'server')
V = r'[A-Za-z_]\w*'
# if (DECL v = EXPR; !v.ok()) return v | v.status();   (braces optional)
IF_INIT = re.compile(
    r'\bif\s*\(\s*(?:const\s+)?(?P<t>auto|absl::Status|absl::StatusOr<[^;{}()]*?>)\s+(?P<v>' + V +
    r')\s*=[^;{}]*;\s*!\s*(?P=v)\.ok\(\)\s*\)\s*(?P<b>\{\s*)?return\s+(?P<r>(?P=v)|(?P=v)\.status\(\))'
    r'\s*;(?(b)\s*\})')
# TYPE v = EXPR;  if (!v.ok()) return v | v.status();   (the check right after the declaration)
DECL_THEN_IF = re.compile(
    r'(?:^|[;{}])\s*(?:const\s+)?(?P<t>auto|absl::Status|absl::StatusOr<[^;{}()\n]*?>)\s+(?P<v>' + V +
    r')\s*=[^;{}]*;\s*if\s*\(\s*!\s*(?P=v)\.ok\(\)\s*\)\s*(?P<b>\{\s*)?return\s+'
    r'(?P<r>(?P=v)|(?P=v)\.status\(\))\s*;(?(b)\s*\})')
MACRO = re.compile(r'\b(?:RETURN_IF_ERROR|ASSIGN_OR_RETURN)\s*\(')
COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/', re.S)

# Plain repeats allowed per file (the ratchet). Files not named here are allowed none.
ALLOWED = {}


def strip_comments(text):
    # Comments out, string literals kept (a "//" inside one is rare in these files and would
    # only hide code from the check, never invent a repeat).
    return COMMENT.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text)


def repeats(text):
    """(line, kind, excerpt) of each plain repeat in a C++ source text."""
    code = strip_comments(text)
    grpc = 'grpc::Status' in code
    found = {}
    for pattern, kind in ((IF_INIT, 'if-init'), (DECL_THEN_IF, 'declared-then-checked')):
        for m in pattern.finditer(code):
            if grpc and m.group('t') == 'auto' and m.group('r') == m.group('v'):
                continue
            start = m.start() if kind == 'if-init' else m.start('t')
            line = code.count('\n', 0, start) + 1
            if line in found:
                continue
            is_status = m.group('t') == 'absl::Status' or m.group('r') == m.group('v')
            macro = 'RETURN_IF_ERROR' if kind == 'if-init' or is_status else 'ASSIGN_OR_RETURN'
            excerpt = ' '.join(code[start:m.end()].split())
            found[line] = (line, macro, excerpt)
    return [found[k] for k in sorted(found)]


def scan(root):
    per_file, macros = {}, collections.Counter()
    for top in ROOTS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(('.cc', '.h')) or name == 'status_macros.h':
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding='utf-8', errors='replace') as f:
                    text = f.read()
                found = repeats(text)
                if found:
                    per_file[rel] = found
                macros[rel] = len(MACRO.findall(strip_comments(text)))
    return per_file, macros


def folder_of(rel):
    parts = rel.split('/')
    return '/'.join(parts[:2]) if parts[0] in ('common', 'client', 'wire') else '/'.join(parts[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    ap.add_argument('--list', action='store_true', help='print every plain repeat')
    args = ap.parse_args()
    per_file, macros = scan(args.root)
    by_folder = collections.defaultdict(lambda: [0, 0])
    for rel, found in per_file.items():
        by_folder[folder_of(rel)][0] += len(found)
    for rel, n in macros.items():
        if n:
            by_folder[folder_of(rel)][1] += n
    for folder in sorted(by_folder):
        r, m = by_folder[folder]
        print('%-28s plain repeats %4d   macro uses %4d' % (folder, r, m))
    print('%-28s plain repeats %4d   macro uses %4d' %
          ('total', sum(len(f) for f in per_file.values()), sum(macros.values())))
    if args.list:
        for rel in sorted(per_file):
            for line, macro, excerpt in per_file[rel]:
                print('%s:%d: %s: %s' % (rel, line, macro, excerpt[:160]))
        return 0
    over = {rel: found for rel, found in per_file.items() if len(found) > ALLOWED.get(rel, 0)}
    if not over:
        print('check_status_macros: no file holds more plain repeats than its allowance')
        return 0
    for rel in sorted(over):
        print('%s: %d plain repeats, %d allowed:' % (rel, len(over[rel]), ALLOWED.get(rel, 0)),
              file=sys.stderr)
        for line, macro, excerpt in over[rel]:
            print('  %s:%d: write %s (common/status/status_macros.h): %s' %
                  (rel, line, macro, excerpt[:120]), file=sys.stderr)
    print('check_status_macros: an early return that repeats the macros; use the macro (a return '
          'that adds context, maps the code, logs or cleans up is not a repeat: reshape it so '
          'the check sees the difference, or raise ALLOWED in scripts/check_status_macros.py '
          'with a reason)', file=sys.stderr)
    return 1


if __name__ == '__main__':
    sys.exit(main())
