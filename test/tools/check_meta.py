#!/usr/bin/env python3
"""PGXN: META.json against the PGXN Meta Spec 1.0.0, and the release archive.

  check_meta.py               META.json: the spec's JSON Schema
                              (test/pgxn/meta-v1.schema.json) with a JSON
                              Schema validator (python3-jsonschema, Draft
                              2020-12, formats checked), then what the spec
                              cannot say: the versions agree (META.json,
                              its extension, zero_stream.control, the
                              library, debian/changelog), the files it
                              names exist, its PostgreSQL range holds the
                              versions CI tests. Known-bad documents must
                              be refused, so the schema is never vacuous.
  check_meta.py --dist ZIP    the archive "make dist" made: one top folder
                              zero_stream-<version>/, META.json, the
                              Makefile, the control file, every install and
                              update script, and no build product.

Exits 1 with one line per problem.
"""
import copy
import json
import os
import re
import sys
import zipfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
TESTED = ['15.0.0', '17.0.0', '18.0.0']   # the versions scripts/test.sh runs

try:
    import jsonschema
except ImportError:
    sys.exit('check_meta: python3-jsonschema is missing (scripts/install-deps.sh installs it)')


def read(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as f:
        return f.read()


def schema_errors(meta, schema):
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    return sorted('/'.join(str(p) for p in e.absolute_path) + ': ' + e.message
                  for e in validator.iter_errors(meta))


def semver(v):
    return tuple(int(x) for x in re.match(r'(\d+)\.(\d+)\.(\d+)', v).groups())


def in_range(version, spec):
    """Does version satisfy a Meta Spec version range ("0", "1.2.0", ">= 1.0.0, < 2.0.0")?"""
    ops = {'==': lambda a, b: a == b, '!=': lambda a, b: a != b, '<=': lambda a, b: a <= b,
           '>=': lambda a, b: a >= b, '<': lambda a, b: a < b, '>': lambda a, b: a > b}
    if str(spec) == '0':
        return True
    for part in str(spec).split(','):
        m = re.match(r'\s*(==|!=|<=|>=|<|>)?\s*(\S+)\s*$', part)
        op = m.group(1) or '>='
        if not ops[op](semver(version), semver(m.group(2))):
            return False
    return True


def check_meta(problems):
    schema = json.loads(read('test/pgxn/meta-v1.schema.json'))
    jsonschema.Draft202012Validator.check_schema(schema)
    meta = json.loads(read('META.json'))
    problems += ['META.json: ' + e for e in schema_errors(meta, schema)]

    # the schema refuses what the spec refuses
    bad = {
        'no license': lambda m: m.pop('license'),
        'no provides': lambda m: m.pop('provides'),
        'a version that is not SemVer': lambda m: m.update(version='0.2'),
        'a license the spec does not name': lambda m: m.update(license='postgres'),
        'an unknown release_status': lambda m: m.update(release_status='beta'),
        'an extension without a file': lambda m: m['provides']['zero_stream'].pop('file'),
        'a meta-spec other than 1.0.0': lambda m: m['meta-spec'].update(version='2.0.0'),
        'an unknown top-level key': lambda m: m.update(homepage='https://example.org'),
        'a bad version range': lambda m: m['prereqs']['runtime']['requires'].update(PostgreSQL='>= 15'),
        'an unknown prereq phase': lambda m: m['prereqs'].update(install={'requires': {'x': 0}}),
    }
    for what, change in bad.items():
        broken = copy.deepcopy(meta)
        change(broken)
        if not schema_errors(broken, schema):
            problems.append(f'the schema accepts a META.json with {what}')

    version = meta.get('version')
    ext = meta.get('provides', {}).get('zero_stream', {})
    control = re.search(r"^default_version\s*=\s*'([^']+)'", read('zero_stream.control'), re.M).group(1)
    library = re.search(r'#define ZS_LIBRARY_VERSION "([^"]+)"', read('src/extension_version.h')).group(1)
    debian = re.match(r'\S+ \(([^)-]+)', read('debian/changelog')).group(1) \
        if os.path.exists(os.path.join(ROOT, 'debian/changelog')) else version
    for what, v in [("provides.zero_stream.version", ext.get('version')), ('zero_stream.control', control),
                    ('ZS_LIBRARY_VERSION', library), ('debian/changelog', debian)]:
        if v != version:
            problems.append(f'META.json: version {version}, but {what} says {v}')
    # every script in sql/ is installed, and every installed one exists
    data = set(re.search(r'^DATA\s*=\s*(.*)$', read('Makefile'), re.M).group(1).split())
    scripts = {'sql/' + f for f in os.listdir(os.path.join(ROOT, 'sql'))
               if re.fullmatch(r'zero_stream--[^/]+\.sql', f)}
    problems += [f'Makefile: {f} is not in DATA' for f in sorted(scripts - data)]
    problems += [f'Makefile: DATA names {f}, which does not exist' for f in sorted(data - scripts)]
    for key in ('file', 'docfile'):
        if key in ext and not os.path.exists(os.path.join(ROOT, ext[key])):
            problems.append(f'META.json: provides.zero_stream.{key} {ext[key]} does not exist')
    if ext.get('file') != f'sql/zero_stream--{version}.sql':
        problems.append(f'META.json: provides.zero_stream.file is not sql/zero_stream--{version}.sql')
    spec = meta.get('prereqs', {}).get('runtime', {}).get('requires', {}).get('PostgreSQL')
    if spec is None:
        problems.append('META.json: no runtime requirement on PostgreSQL')
    else:
        problems += [f'META.json: PostgreSQL {v} is tested but outside "{spec}"'
                     for v in TESTED if not in_range(v, spec)]
    return meta


def check_dist(archive, problems):
    """The archive on its own terms: its META.json names its top folder, its
    Makefile its scripts."""
    with zipfile.ZipFile(archive) as z:
        names = z.namelist()
        if z.testzip() is not None:
            problems.append(f'{archive}: a damaged member')
        tops = {n.split('/', 1)[0] for n in names}
        if len(tops) != 1:
            problems.append(f'{archive}: {len(tops)} top folders')
            return
        top = tops.pop() + '/'
        try:
            meta = json.loads(z.read(top + 'META.json'))
            makefile = z.read(top + 'Makefile').decode()
        except KeyError as e:
            problems.append(f'{archive}: {e.args[0]}')
            return
    if top != f"{meta['name']}-{meta['version']}/":
        problems.append(f"{archive}: its top folder {top} is not {meta['name']}-{meta['version']}/")
    data = re.search(r'^DATA\s*=\s*(.*)$', makefile, re.M).group(1).split()
    for need in ['META.json', 'Makefile', 'zero_stream.control', 'README.md'] + data:
        if top + need not in names:
            problems.append(f'{archive}: {need} is missing')
    built = [n for n in names if re.search(r'\.(o|so|bc)$|/zero-stream-(tail|replica|fanout)$', n)]
    problems += [f'{archive}: a build product {n}' for n in built]
    if any('/.git/' in n or n.endswith('/.git') for n in names):
        problems.append(f'{archive}: the git folder is in it')


def main():
    problems = []
    if len(sys.argv) == 3 and sys.argv[1] == '--dist':
        check_dist(sys.argv[2], problems)
        with zipfile.ZipFile(sys.argv[2]) as z:
            what = f'dist: {len(z.namelist())} members in {os.path.basename(sys.argv[2])}'
    elif len(sys.argv) == 1:
        meta = check_meta(problems)
        what = f"META.json: {meta.get('name')} {meta.get('version')} against PGXN Meta Spec 1.0.0"
    else:
        sys.exit(__doc__)
    for p in problems:
        print(p)
    print(f'{what}: {len(problems)} problems')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
