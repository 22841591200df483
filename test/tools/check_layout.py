#!/usr/bin/env python3
"""Check the source tree against its rules (make layoutcheck, part of unitcheck).

1. README.md's Layout section lists every file under src/ and nothing that
   does not exist.
2. Includes follow the layers (docs/architecture.md): compat/ (the
   PostgreSQL version guards) includes none of ours and anyone may include it;
   codec/ includes only codec/; the infrastructure (guc, shmem, spi_xact, slot_health) only codec/ and itself;
   changelog/ and the replica library below the workers; a worker's files
   (decoder/, server/, replica/replicator_worker.c) never include another
   worker's; client/ only codec/, client/ and the replica library.
3. The include graph has no cycle.

Exits 1 with one line per violation; prints a summary line either way.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
SRC = os.path.join(ROOT, 'src')

INFRA = {'guc', 'shmem', 'spi_xact', 'slot_health'}
REPLICA_LIBRARY_PREFIXES = ('replica/replica_', 'replica/backup_file', 'replica/backup_copy')


def unit_of(path):
    """The layer unit a file belongs to (path relative to src/, no suffix)."""
    stem = os.path.splitext(path)[0]
    if '/' not in stem:
        return 'infra' if stem in INFRA else 'entry'
    folder = stem.split('/')[0]
    if folder == 'replica':
        return 'replica-lib'
    return folder


# what each unit may include (besides itself)
ALLOWED = {
    'compat': set(),
    'codec': {'compat'},
    'infra': {'codec', 'compat'},
    'changelog': {'codec', 'infra', 'compat'},
    'replica-lib': {'codec', 'infra', 'changelog', 'compat'},
    'decoding': {'codec', 'infra', 'compat'},
    'purge': {'codec', 'infra', 'changelog', 'compat'},
    'backfill': {'codec', 'infra', 'changelog', 'decoding', 'compat'},
    'decoder': {'codec', 'infra', 'changelog', 'replica-lib', 'decoding', 'backfill', 'purge', 'compat'},
    'server': {'codec', 'infra', 'changelog', 'replica-lib', 'compat'},
    'replicator': {'codec', 'infra', 'changelog', 'replica-lib', 'compat'},
    'client': {'codec', 'replica-lib', 'compat'},
    'entry': {'codec', 'infra', 'compat'},
}


def source_files():
    for dirpath, _, files in os.walk(SRC):
        for f in files:
            if f.endswith(('.c', '.h')):
                yield os.path.relpath(os.path.join(dirpath, f), SRC)


def includes(path):
    text = open(os.path.join(SRC, path), encoding='utf-8').read()
    for m in re.finditer(r'^#include "([^"]+)"', text, re.M):
        target = m.group(1)
        if os.path.exists(os.path.join(SRC, target)):
            yield target


def layout_names():
    """Files named in README.md's Layout block, relative to src/."""
    text = open(os.path.join(ROOT, 'README.md'), encoding='utf-8').read()
    m = re.search(r'^## Layout\n.*?^```\n(.*?)^```', text, re.M | re.S)
    if not m:
        return None
    names = set()
    folder = ''
    for line in m.group(1).splitlines():
        entry = re.split(r'\s{2,}', line.strip(), maxsplit=1)[0]
        if line.startswith('src/'):
            entry = entry[len('src/'):]
            folder = entry if entry.endswith('/') else ''
            if entry.endswith('/'):
                continue
            names.update(n.strip() for n in entry.split(','))
        elif line.startswith((' ', '\t')) and folder:
            names.update(folder + n.strip() for n in entry.split(',') if re.search(r'\.[ch]$', n.strip()))
    return names


def main():
    problems = []
    files = sorted(source_files())

    listed = layout_names()
    if listed is None:
        problems.append('README.md has no Layout section with a code block')
    else:
        for f in files:
            # a header is covered by its .c file
            if f not in listed and not (f.endswith('.h') and f[:-2] + '.c' in listed):
                problems.append(f'src/{f} is not in README.md\'s Layout section')
        for name in sorted(listed):
            if not os.path.exists(os.path.join(SRC, name)):
                problems.append(f'README.md\'s Layout lists src/{name}, which does not exist')

    graph = {f: list(includes(f)) for f in files}
    for f, targets in graph.items():
        unit = unit_of(f)
        for t in targets:
            tunit = unit_of(t)
            if tunit != unit and tunit not in ALLOWED[unit]:
                problems.append(f'src/{f} ({unit}) includes src/{t} ({tunit}): against the layers')

    # cycles, by depth-first search over files
    state = {}

    def visit(node, stack):
        state[node] = 'open'
        stack.append(node)
        for t in graph.get(node, []):
            if state.get(t) == 'open':
                problems.append('include cycle: ' + ' -> '.join(stack[stack.index(t):] + [t]))
            elif t not in state:
                visit(t, stack)
        stack.pop()
        state[node] = 'done'

    for f in files:
        if f not in state:
            visit(f, [])

    for p in problems:
        print(p)
    edges = sum(len(v) for v in graph.values())
    print(f'layout: {len(files)} files, {edges} include edges, {len(problems)} problems')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
