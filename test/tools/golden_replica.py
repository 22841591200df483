#!/usr/bin/env python3
"""Compare our backup replica with zero-cache's replica of the golden workload.

    golden_replica.py replica-dump.txt ours.db

replica-dump.txt is zero-cache 1.9.0's replica after applying the golden change
log (test/golden). For every application table in it (those the workload
creates by DDL included), each row zero-cache has (matched by key) must be in
ours with every column's value and SQLite storage class identical, except the
columns whose values zero_stream deliberately corrects (test/golden/README.md),
and the values of now() at the time the workload ran (the backfilled
created_at), whose storage class only is compared (an integer where
zero-cache's is real only if it is a whole millisecond). _0_version must map golden
watermarks to ours one-to-one (the same commit, the same version).
Prints a summary and every unexpected difference; exits 1 if there is one.
"""
import re
import sqlite3
import sys

KEYS = {
    "all_types": ["id"],
    "full_ident": ["id"],
    "idx_ident": ["code", "region"],
    "toasty": ["id"],
    "toasty_full": ["id"],
    "ddl_tx": ["id"],
}
# values zero_stream writes correctly where zero-cache 1.9.0 does not
CORRECTED = {"c_date", "c_numeric", "c_numeric_arr", "c_point_arr", "c_text_arr",
             "c_timestamp", "c_timestamptz_arr"}
# now() when the workload ran (T58's backfill, T59's insert): storage class only
VOLATILE = {("full_ident", "created_at")}


def parse_dump(path):
    tables, table, row, pending = {}, None, None, None
    line_re = re.compile(r"^\s*(\S+): (.*) :(integer|real|text|null|blob)$", re.S)
    for raw in open(path, encoding="utf-8"):
        line = raw.rstrip("\n")
        if pending is not None:
            pending += "\n" + line
            m = line_re.match(pending)
            if m:
                row[m.group(1)] = (m.group(2), m.group(3))
                pending = None
            continue
        m = re.match(r'^== table "([^"]+)" \((\d+) rows\)$', line)
        if m:
            table = m.group(1)
            tables[table] = []
            row = None
            continue
        if table is None or line.startswith("=="):
            table = None if line.startswith("==") else table
            continue
        if line.strip() == "":
            row = None
            continue
        if row is None:
            row = {}
            tables[table].append(row)
        m = line_re.match(line)
        if m:
            row[m.group(1)] = (m.group(2), m.group(3))
        else:
            pending = line
    return tables


class Truncated:
    """A long text value the dump shortened to its start and its length."""

    def __init__(self, prefix, length):
        self.prefix, self.length = prefix, length

    def __eq__(self, other):
        return isinstance(other, str) and len(other) == self.length and other.startswith(self.prefix)

    def __hash__(self):
        return hash((self.prefix, self.length))

    def __repr__(self):
        return f"{self.prefix!r}...({self.length} chars)"


def golden_value(text, kind):
    if kind == "null":
        return None
    if kind == "integer":
        return int(text)
    if kind == "real":
        return float(text)
    if kind == "text":
        m = re.match(r"^'(.*)'\.\.\.\((\d+) chars\)$", text, re.S)
        if m:
            return Truncated(m.group(1).replace("''", "'"), int(m.group(2)))
        assert text.startswith("'") and text.endswith("'"), text
        return text[1:-1].replace("''", "'")
    raise ValueError(kind)


STORAGE = {type(None): "null", int: "integer", float: "real", str: "text", bytes: "blob"}


def as_dumped(value):
    """Text as the dump renders it: line breaks re-indented, control characters as ^X."""
    value = value.replace("\r\n", "\n")
    return "".join(c if c in "\t\n" or ord(c) >= 0x20 else "^" + chr(ord(c) + 64) for c in value)


def dumped_equal(golden, ours):
    if not isinstance(golden, str) or not isinstance(ours, str) or "\n" not in golden:
        return False
    return re.sub(r"\n +", "\n", golden) == as_dumped(ours)


def main():
    golden = parse_dump(sys.argv[1])
    db = sqlite3.connect(sys.argv[2])
    db.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    rows = values = corrected = volatile = 0
    unexpected = []
    versions = {}
    for table, key in KEYS.items():
        cur = db.execute(f'SELECT * FROM "{table}"')
        names = [d[0] for d in cur.description]
        ours = {}
        for r in cur:
            rec = dict(zip(names, r))
            ours[tuple(rec[k] for k in key)] = rec
        for grow in golden.get(table, []):
            k = tuple(golden_value(*grow[c]) for c in key)
            rows += 1
            orow = ours.get(k)
            if orow is None:
                unexpected.append(f"{table} {k}: row missing from ours")
                continue
            for col, (text, kind) in grow.items():
                gv = golden_value(text, kind)
                if col == "_0_version":
                    mapped = versions.setdefault(gv, orow.get(col))
                    if mapped != orow.get(col):
                        unexpected.append(f"{table} {k}: _0_version {orow.get(col)} where the same golden commit {gv} is {mapped}")
                    continue
                if col not in orow:
                    unexpected.append(f"{table} {k}: column {col} missing from ours")
                    continue
                ov = orow[col]
                if (table, col) in VOLATILE:
                    volatile += 1
                    # a now() at a whole millisecond is a JSON integer, which
                    # the column's NUMERIC affinity keeps an integer (1 in 1,000)
                    whole_ms = kind == "real" and isinstance(ov, int)
                    if STORAGE[type(ov)] != kind and not whole_ms:
                        unexpected.append(f"{table} {k}.{col}: ours {ov!r} ({STORAGE[type(ov)]}), zero-cache {gv!r} ({kind})")
                    continue
                values += 1
                same = STORAGE[type(ov)] == kind and (gv == ov or dumped_equal(gv, ov))
                if same:
                    continue
                if col in CORRECTED:
                    corrected += 1
                    continue
                unexpected.append(f"{table} {k}.{col}: ours {ov!r} ({STORAGE[type(ov)]}), zero-cache {gv!r} ({kind})")
    if len(set(versions.values())) != len(versions):
        unexpected.append(f"_0_version: distinct golden commits share one of ours: {versions}")
    for u in unexpected:
        print("UNEXPECTED", u)
    print(f"{rows} rows, {values} values compared: {values - corrected} identical, "
          f"{corrected} corrected, {volatile} now() values of the same storage class, {len(unexpected)} unexpected; "
          f"{len(versions)} commits")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
