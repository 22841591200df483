#!/usr/bin/env python3
"""Check the source tree against its rules (make layoutcheck, part of unitcheck).

A module is a .c file with its .h (a header without a .c is a module of its
own). The rules:

1. docs/architecture.md's Layout section lists every module under src/ and
   nothing that does not exist.
2. Includes follow the layers (docs/architecture.md, "Source layers"): every
   folder is one layer, and a layer includes only the layers below it, listed
   in LAYERS; no folder is special-cased.
3. The module graph (module A -> module B when a file of A includes a file of
   B) has no cycle.
4. No source file is over MAX_LINES lines.

Exits 1 with one line per violation; prints a summary line either way.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
SRC = os.path.join(ROOT, 'src')
LAYOUT_DOC = os.path.join(ROOT, 'docs', 'architecture.md')
MAX_LINES = 800

# the infrastructure at src/'s top; the other top-level files are the entry
INFRA = {'guc', 'ownership', 'shmem', 'spi_xact', 'slot_health', 'standby_slots', 'standby_hold', 'extension_version'}

# each layer and the layers it may include (besides itself), bottom up
LAYERS = {
    'compat': set(),
    'codec': {'compat'},
    'infra': {'codec', 'compat'},
    'changelog': {'codec', 'infra', 'compat'},
    'purge': {'codec', 'infra', 'changelog', 'compat'},
    'decoding': {'codec', 'infra', 'compat'},
    'replica': {'codec', 'infra', 'changelog', 'compat'},
    'backfill': {'codec', 'infra', 'changelog', 'decoding', 'compat'},
    'live': {'codec', 'infra', 'changelog', 'compat'},
    'decoder': {'codec', 'infra', 'changelog', 'purge', 'decoding', 'replica', 'backfill', 'live', 'compat'},
    'server': {'codec', 'infra', 'changelog', 'replica', 'live', 'compat'},
    'replicator': {'codec', 'infra', 'changelog', 'replica', 'compat'},
    'client': {'codec', 'replica', 'compat'},
    'entry': {'codec', 'infra', 'compat'},
}


def layer_of(path):
    """The layer a file (relative to src/) belongs to."""
    stem = os.path.splitext(path)[0]
    if '/' not in stem:
        return 'infra' if stem in INFRA else 'entry'
    return stem.split('/')[0]


def module_of(path):
    return os.path.splitext(path)[0]


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
    """Files named in the Layout section's code block, relative to src/."""
    text = open(LAYOUT_DOC, encoding='utf-8').read()
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
    modules = sorted({module_of(f) for f in files})

    for f in files:
        layer = layer_of(f)
        if layer not in LAYERS:
            problems.append(f'src/{f}: folder {layer}/ is not a layer of check_layout.py (nor of docs/architecture.md)')

    listed = layout_names()
    if listed is None:
        problems.append('docs/architecture.md has no Layout section with a code block')
    else:
        for f in files:
            # a header is covered by its .c file
            if f not in listed and not (f.endswith('.h') and f[:-2] + '.c' in listed):
                problems.append(f'src/{f} is not in docs/architecture.md\'s Layout section')
        for name in sorted(listed):
            if not os.path.exists(os.path.join(SRC, name)):
                problems.append(f'docs/architecture.md\'s Layout lists src/{name}, which does not exist')

    graph = {m: set() for m in modules}
    for f in files:
        layer = layer_of(f)
        for t in includes(f):
            tlayer = layer_of(t)
            if tlayer != layer and tlayer not in LAYERS.get(layer, set()):
                problems.append(f'src/{f} ({layer}) includes src/{t} ({tlayer}): against the layers')
            if module_of(t) != module_of(f):
                graph[module_of(f)].add(module_of(t))

    # module cycles, by depth-first search
    state = {}
    cycles = set()

    def visit(node, stack):
        state[node] = 'open'
        stack.append(node)
        for t in sorted(graph.get(node, ())):
            if state.get(t) == 'open':
                cycle = stack[stack.index(t):]
                key = tuple(sorted(cycle))
                if key not in cycles:
                    cycles.add(key)
                    problems.append('module cycle: ' + ' -> '.join(cycle + [t]))
            elif t not in state:
                visit(t, stack)
        stack.pop()
        state[node] = 'done'

    for m in modules:
        if m not in state:
            visit(m, [])

    for f in files:
        with open(os.path.join(SRC, f), encoding='utf-8') as fh:
            n = sum(1 for _ in fh)
        if n > MAX_LINES:
            problems.append(f'src/{f} has {n} lines, over {MAX_LINES}')

    for p in problems:
        print(p)
    edges = sum(len(v) for v in graph.values())
    print(f'layout: {len(files)} files in {len(modules)} modules, {edges} module edges, '
          f'{len(problems)} problems')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
