#!/usr/bin/env python3
"""Random values of every built-in type, and their check against the change log.

Used by TAP test 014_value_fuzz.pl:

    value_check.py generate --seed N --out DIR [--scale F] [--xml]
        DIR/schema.sql      types and one table per type family (schema public)
        DIR/NN_<group>.sql  the inserts of one group, as several transactions
        DIR/manifest.json   tables, columns (SQL type, encoding kind), groups
        and prints one line per group: name file rows transactions risky

    value_check.py check --dir DIR --host H --port P [--db D] [--max-report N]
        Reads every row of the fuzz tables with PostgreSQL's own output (the
        type's output function, under the decoder's display settings: UTC,
        ISO dates, ...; extract(epoch ...) * 1000 for dates and times) and
        every stored insert of "zero_0/cdc"."changeLog" (through psql), and
        checks:
          * every row is in the change log exactly once (no missing row,
            no duplicate, no unknown id);
          * every value decodes to what PostgreSQL says (zero-protocol.md §3.7,
            README "What is stored"): int2/int4/int8/oid exact integers;
            float4/float8/numeric as JavaScript's Number(text) within one ulp,
            NaN/±Infinity and out-of-range as null (underflow: 0); bool;
            timestamps as float ms since the epoch within two ulps; dates as
            ms of UTC midnight; time/timetz as integer ms since midnight
            (timetz in UTC); bytea as {"type":"Buffer","data":[...]}; json and
            jsonb as their text; arrays as nested JSON arrays (NULL -> null,
            lower bounds dropped) whose json/jsonb elements are what
            BigIntJSON.stringify(BigIntJSON.parse(text)) makes of them;
            everything else (domains, enums, composites, ranges, ...) as its
            text;
          * spelling: numbers as JavaScript's JSON.stringify spells them
            (numerics that would print as integers beyond 2^53 in exponent
            form), json[] elements as zero-cache re-writes them (a repeated
            key keeps its first place and last value, array-index keys first,
            "__proto__" dropped).
        Prints "RESULT key=value" lines, "SUMMARY category type: count" lines,
        then up to --max-report mismatches (at most --per-column per column
        and category) as "MISMATCH ..." blocks; exit status 0.

The generator is deterministic for a given seed (Python's random.Random).
"""
import argparse
import decimal
import ipaddress
import json
import math
import os
import random
import struct
import subprocess
import sys

sys.setrecursionlimit(100000)

MAX_SAFE = 2 ** 53 - 1

# ---------------------------------------------------------------------------
# text pools

ASCII = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
SPECIAL = ['"', "'", "\\", "{", "}", ",", " ", "(", ")", "[", "]", ":", ";", "=",
           "<", ">", "&", "$", "%", "`", "/", "*", "#", "?", "|"]
CONTROL = [chr(c) for c in range(1, 32)] + ["\x7f"]
UNI = ["é", "ß", "ø", "中", "文", "я", "Ω", "\u00a0", "\u2028", "\u2029", "\ufeff",
       "\u200b", "\u200d", "e\u0301", "ﬁ", "ÿ", "\u0394", "\uffff", "\U0010fffd", "\u0080"]
EMOJI = ["😀", "👍🏽", "🇫🇷", "𝄞", "👨\u200d👩\u200d👧", "🀄"]
WHOLE = ["", "NULL", "null", " ", '""', "\\", "\\N", "{}", "()", "a,b", "true", "0",
         "-0", "1e400", "NaN", "[1:2]={x}", '{"a":1}', "'", "''"]
WORDS = ["apple", "über", "naïve", "straße", "中文", "данные", "zero", "stream", "log",
         "value", "fuzz", "😀ok", "x", "Ωmega"]


def rand_string(rng, maxlen=40, long_prob=0.01):
    r = rng.random()
    if r < 0.08:
        return rng.choice(WHOLE)
    if r < 0.08 + long_prob:
        n = rng.randint(2000, 20000)
    else:
        n = int(rng.expovariate(1 / 8))
        n = min(n, maxlen)
    out = []
    for _ in range(n):
        x = rng.random()
        if x < 0.55:
            out.append(rng.choice(ASCII))
        elif x < 0.70:
            out.append(rng.choice(SPECIAL))
        elif x < 0.78:
            out.append(rng.choice(CONTROL))
        elif x < 0.90:
            out.append(rng.choice(UNI))
        else:
            out.append(rng.choice(EMOJI))
    return "".join(out)


def clip_chars(s, n):
    return s[:n]


# ---------------------------------------------------------------------------
# JSON text generation (json / jsonb values, and elements of json[] / jsonb[])

JSON_NUM_PLAIN = ["0", "1", "-1", "12.5", "-0.001", "1e5", "2.5E-3", "100", "3.14159",
                  "12345678901234567890", "-9007199254740993", "9007199254740991", "0.1",
                  "1E+2", "-0", "1.0", "-12.50"]
JSON_NUM_EXTREME = ["1e400", "-1e400", "1e-400", "-1e-400", "1.5e308", "2e308", "1.7976931348623157e308",
                    "1.7976931348623159e308", "4.9e-324", "2.4e-324", "5e-324", "1e-320",
                    "123456789012345678901234567890.5", "1" + "0" * 70, "0." + "0" * 70 + "1",
                    "-0.0", "-0.0e0", "9007199254740993", "9007199254740993.0", "1e21", "1e+21",
                    "100000000000000000000", "0.000001", "1e-7", "123e-2", "1" + "0" * 400,
                    "0.30000000000000004", "-1E-1000"]


def json_escape_string(rng, s, allow_nul):
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "/" and rng.random() < 0.5:
            out.append("\\/")
        elif c < 0x20 or c == 0x7f:
            short = {8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}
            if c in short and rng.random() < 0.6:
                out.append(short[c])
            else:
                out.append("\\u%04x" % c if rng.random() < 0.5 else "\\u%04X" % c)
        elif c > 0x7f and rng.random() < 0.3:
            if c > 0xFFFF:
                v = c - 0x10000
                out.append("\\u%04x\\u%04x" % (0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)))
            else:
                out.append("\\u%04x" % c)
        else:
            out.append(ch)
    if allow_nul and rng.random() < 0.05:
        out.insert(1, "\\u0000")
    out.append('"')
    return "".join(out)


def ws(rng):
    r = rng.random()
    if r < 0.75:
        return ""
    return rng.choice([" ", "  ", "\n", "\t", " \r\n "])


def gen_json(rng, depth=0, extreme=False, allow_nul=False, maxdepth=3):
    r = rng.random()
    if depth < maxdepth and r < 0.25:
        n = rng.randint(0, 5)
        keys = []
        for _ in range(n):
            if extreme and keys and rng.random() < 0.3:
                keys.append(rng.choice(keys))          # duplicate key
            elif extreme and rng.random() < 0.15:
                keys.append(str(rng.choice([0, 1, 2, 7, 10, 4294967294, 4294967295])))
            else:
                keys.append(rand_string(rng, 8, 0))
        parts = [ws(rng) + json_escape_string(rng, k, allow_nul) + ws(rng) + ":" +
                 gen_json(rng, depth + 1, extreme, allow_nul, maxdepth) for k in keys]
        return "{" + ",".join(parts) + ws(rng) + "}"
    if depth < maxdepth and r < 0.45:
        n = rng.randint(0, 5)
        parts = [gen_json(rng, depth + 1, extreme, allow_nul, maxdepth) for _ in range(n)]
        return "[" + ",".join(parts) + ws(rng) + "]"
    r = rng.random()
    if r < 0.35:
        v = json_escape_string(rng, rand_string(rng, 20, 0), allow_nul)
    elif r < 0.8:
        if extreme and rng.random() < 0.5:
            v = rng.choice(JSON_NUM_EXTREME)
        elif rng.random() < 0.5:
            v = rng.choice(JSON_NUM_PLAIN)
        else:
            v = str(rng.randint(-10 ** 6, 10 ** 6))
            if rng.random() < 0.5:
                v += "." + str(rng.randint(0, 999999))
    else:
        v = rng.choice(["true", "false", "null"])
    return ws(rng) + v + ws(rng)


def deep_json(depth, kind):
    if kind == "array":
        return "[" * depth + "1" + "]" * depth
    return '{"a":' * depth + "1e400" + "}" * depth


# ---------------------------------------------------------------------------
# dates and times (PostgreSQL's proleptic Gregorian Julian day numbers)

DATE_MAX_JDN = 2147483494          # 5874897-12-31
TS_MAX_JDN = 109203527             # 294276-12-31
UNIX_JDN = 2440588


def j2date(jd):
    julian = jd + 32044
    quad = julian // 146097
    extra = (julian - quad * 146097) * 4 + 3
    julian += 60 + quad * 3 + extra // 146097
    quad = julian // 1461
    julian -= quad * 1461
    y = julian * 4 // 1461
    julian = ((julian + 305) % 365 if y != 0 else (julian + 306) % 366) + 123
    y += quad * 4
    year = y - 4800
    quad = julian * 2141 // 65536
    day = julian - 7834 * quad // 256
    month = (quad + 10) % 12 + 1
    return year, month, day


def fmt_date(jd):
    y, m, d = j2date(jd)
    if y <= 0:
        return "%04d-%02d-%02d BC" % (1 - y, m, d), True
    return "%04d-%02d-%02d" % (y, m, d), False


def rand_jdn(rng, hi):
    r = rng.random()
    if r < 0.5:
        return UNIX_JDN + rng.randint(-40000, 40000)       # around 1860..2080
    if r < 0.6:
        return rng.randint(1721426, 1721426 + 99 * 366)    # years 1..99
    return rng.randint(0, hi)


def fmt_time(rng, us):
    h, rem = divmod(us, 3600 * 10 ** 6)
    m, rem = divmod(rem, 60 * 10 ** 6)
    s, frac = divmod(rem, 10 ** 6)
    t = "%02d:%02d:%02d" % (h, m, s)
    digits = rng.choice([0, 0, 1, 3, 6, 6])
    if digits:
        t += "." + ("%06d" % frac)[:digits]
    return t


def rand_time_us(rng):
    r = rng.random()
    if r < 0.03:
        return 86400 * 10 ** 6
    return rng.randint(0, 86400 * 10 ** 6 - 1)


def rand_offset(rng):
    sign = rng.choice("+-")
    r = rng.random()
    if r < 0.4:
        return "%s%02d" % (sign, rng.randint(0, 14))
    if r < 0.8:
        return "%s%02d:%02d" % (sign, rng.randint(0, 15), rng.choice([0, 15, 30, 45, 59]))
    return "%s%02d:%02d:%02d" % (sign, rng.randint(0, 15), rng.randint(0, 59), rng.randint(0, 59))


def rand_timestamp(rng, with_zone):
    jd = rand_jdn(rng, TS_MAX_JDN - (400 if with_zone else 0))
    us = rng.randint(0, 86400 * 10 ** 6 - 1)
    date, bc = fmt_date(jd)
    t = fmt_time(rng, us)
    if bc:
        return date[:-3] + " " + t + " BC"
    if with_zone and rng.random() < 0.7:
        t += rand_offset(rng)
    return date + " " + t


# ---------------------------------------------------------------------------
# numbers

def rand_float8_text(rng):
    r = rng.random()
    if r < 0.4:
        while True:
            v = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            if math.isfinite(v):
                return repr(v)
    if r < 0.7:
        return "%s%d.%de%d" % (rng.choice(["", "-"]), rng.randint(0, 9999), rng.randint(0, 9999),
                                rng.randint(-30, 30))
    return repr(rng.uniform(-1e6, 1e6))


def rand_float4_text(rng):
    r = rng.random()
    if r < 0.4:
        while True:
            v = struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0]
            if math.isfinite(v):
                return repr(v)
    if r < 0.7:
        return "%s%d.%de%d" % (rng.choice(["", "-"]), rng.randint(0, 999), rng.randint(0, 999),
                                rng.randint(-30, 30))
    return repr(rng.uniform(-1e4, 1e4))


def rand_digits(rng, n):
    return "".join(rng.choice("0123456789") for _ in range(n))


def rand_numeric_text(rng, extreme):
    sign = rng.choice(["", "", "-"])
    if not extreme:
        r = rng.random()
        if r < 0.5:
            return sign + str(rng.randint(0, 10 ** rng.randint(1, 15)))
        ip = str(rng.randint(0, 10 ** rng.randint(0, 12)))
        fp = rand_digits(rng, rng.randint(1, 12))
        return sign + ip + "." + fp
    r = rng.random()
    if r < 0.35:     # exponent form, huge or tiny magnitudes
        mant = rand_digits(rng, 1).replace("0", "1") + "." + rand_digits(rng, rng.randint(0, 30))
        return sign + mant + "e" + str(rng.randint(-1100, 1100))
    if r < 0.6:      # long integers
        return sign + rand_digits(rng, 1).replace("0", "7") + rand_digits(rng, rng.randint(15, 120))
    if r < 0.8:      # long fractions
        return sign + "0." + rand_digits(rng, rng.randint(15, 120))
    # few significant digits, long text: 1e64-like
    return sign + rng.choice("123456789") + "0" * rng.randint(15, 400) + \
        rng.choice(["", "." + "0" * rng.randint(1, 40)])


NUMERIC_EDGES = ["0", "-0", "0.000", "1e-1000", "-1e-1000", "1e64", "-1e70", "1" + "0" * 70,
                 "1" + "0" * 70 + ".5", "0." + "1234567890" * 7, "-0." + "0" * 69 + "1",
                 "NaN", "Infinity", "-Infinity", "9007199254740991", "9007199254740992",
                 "9007199254740993", "-9007199254740993", "2e308", "-2e308",
                 "1.7976931348623157e308", "1.7976931348623159e308", "5e-324", "2.5e-324",
                 "2.4e-324", "1e-320", "1.23456789e-320", "1e21", "1e20", "123456789012345678901234567890",
                 "0.1", "0.30000000000000004", "100", "1e-7", "0.000001", "12345678901234567890.12345",
                 "99999999999999999999", "1e15", "123456789012345", "1234567890123456",
                 "1e63", "1e65", "1" + "0" * 1000, "0." + "0" * 1000 + "1"]
FLOAT8_EDGES = ["0", "-0", "5e-324", "4.9e-324", "1e308", "-1e308", "1.7976931348623157e308",
                "2.2250738585072014e-308", "2.225073858507201e-308", "NaN", "Infinity", "-Infinity",
                "9007199254740991", "9007199254740992", "9007199254740993", "1e21", "1e20",
                "123456789012345680000", "1e-7", "1e-6", "0.1", "0.30000000000000004", "-1.5",
                "1e16", "1.5e300"]
FLOAT4_EDGES = ["0", "-0", "1.4e-45", "1.17549435e-38", "3.4028235e38", "-3.4028235e38", "NaN",
                "Infinity", "-Infinity", "16777217", "0.1", "1e-7", "1e21", "1.5"]
INT2_EDGES = ["-32768", "32767", "0", "-1", "1"]
INT4_EDGES = ["-2147483648", "2147483647", "0", "-1"]
INT8_EDGES = ["-9223372036854775808", "9223372036854775807", "9007199254740991", "9007199254740992",
              "9007199254740993", "-9007199254740993", "0", "-1"]
OID_EDGES = ["0", "4294967295", "2147483648", "1"]

DATE_EDGES = ["infinity", "-infinity", "4714-11-24 BC", "4713-01-01 BC", "0001-01-01",
              "0001-12-31 BC", "0044-03-15 BC", "0099-12-31", "0010-06-15", "1969-12-31",
              "1970-01-01", "2000-02-29", "5874897-12-31", "275760-09-13", "275760-09-14",
              "294276-12-31", "1000000-01-01"]
TIMESTAMP_EDGES = ["infinity", "-infinity", "294276-12-31 23:59:59.999999", "4714-11-24 00:00:00 BC",
                   "4713-01-01 00:00:00 BC", "0001-01-01 00:00:00", "0001-12-31 23:59:59.999999 BC",
                   "0099-12-31 23:59:59.999999", "0050-06-15 12:00:00", "0001-01-01 00:00:00.5",
                   "1969-12-31 23:59:59.999999", "1970-01-01 00:00:00", "1970-01-01 00:00:00.000001",
                   "1899-12-31 23:59:59.5", "294247-01-10 04:00:54.775807",
                   "294247-01-10 04:00:54.775808", "294250-01-01 00:00:00",
                   "275760-09-13 00:00:00.000001", "2000-02-29 12:34:56.789012"]
TIMESTAMPTZ_EDGES = ["infinity", "-infinity", "294276-12-31 23:59:59.999999+00",
                     "294276-12-31 18:00:00-05", "4714-11-24 00:00:00+00 BC",
                     "4713-01-01 00:00:00+00 BC", "0001-01-01 00:00:00+00", "0044-03-15 12:00:00 BC",
                     "0099-12-31 23:59:59.999999+00", "1969-12-31 23:59:59.999999+00",
                     "1970-01-01 00:00:00+00", "1800-01-01 00:00:00", "1900-06-01 12:00:00.5",
                     "294247-01-10 04:00:54.775808+00", "294250-06-01 00:00:00+00",
                     "2020-06-01 12:00:00+05:45", "2020-06-01 12:00:00-03:30:15"]
TIME_EDGES = ["00:00:00", "24:00:00", "23:59:59.999999", "12:34:56.789", "00:00:00.000001",
              "00:00:00.0009", "12:00:00.9999"]
TIMETZ_EDGES = ["00:00:00+00", "24:00:00-15:59:59", "00:00:00+15:59:59", "23:59:59.999999-15:59",
                "12:34:56.789+05:30", "00:00:00+14", "24:00:00+00", "06:00:00.0005-01:02:03",
                "00:00:00.999+00:00:01"]
INTERVAL_EDGES = ["0", "-178000000 years", "178000000 years", "1 day -00:00:00.000001",
                  "-178956970 years -8 mons -2147483648 days -596523:14:07.999999",
                  "178956970 years 7 mons 2147483647 days 596523:14:07.999999",
                  "1 mon 30 days", "0.000001 seconds", "-1 year +1 mon"]


# ---------------------------------------------------------------------------
# element types

class T:
    """A scalar SQL type: its generator of input texts and its encoding kind."""

    def __init__(self, sql, kind, gen, edges=(), delim=",", extreme=None, array_edges=None):
        self.sql = sql
        self.kind = kind            # encoding: int float numeric bool string json timestamp ...
        self.gen = gen              # rng -> input text
        self.edges = list(edges)
        self.extreme = extreme      # rng -> input text of the risky kind, or None
        self.delim = delim
        # element edges used in the (non-risky) edge arrays
        self.array_edges = self.edges if array_edges is None else list(array_edges)


def rand_int_text(lo, hi, edges):
    def g(rng):
        if rng.random() < 0.15:
            return rng.choice(edges)
        r = rng.random()
        if r < 0.5:
            return str(rng.randint(max(lo, -1000), min(hi, 1000)))
        return str(rng.randint(lo, hi))
    return g


def g_bool(rng):
    return rng.choice(["t", "f", "true", "false", "yes", "off", "1", "0"])


def g_bytea(rng):
    r = rng.random()
    if r < 0.05:
        n = 0
    elif r < 0.08:
        n = rng.randint(5000, 30000)
    else:
        n = rng.randint(1, 40)
    return "\\x" + bytes(rng.getrandbits(8) for _ in range(n)).hex()


def g_char1(rng):
    r = rng.random()
    if r < 0.1:
        return ""
    if r < 0.3:
        return "\\%03o" % rng.randint(128, 255)
    return rng.choice(ASCII + "\"'\\{},() ")


def g_uuid(rng):
    h = "%032x" % rng.getrandbits(128)
    s = "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])
    r = rng.random()
    if r < 0.2:
        return s.upper()
    if r < 0.3:
        return "{" + s + "}"
    if r < 0.4:
        return h
    return s


def g_inet(rng, cidr=False):
    if rng.random() < 0.5:
        addr = ipaddress.IPv4Address(rng.getrandbits(32))
        mask = rng.randint(0, 32)
    else:
        addr = ipaddress.IPv6Address(rng.getrandbits(128) if rng.random() < 0.7
                                     else (0xffff << 32) | rng.getrandbits(32))
        mask = rng.randint(0, 128)
    if cidr:
        return str(ipaddress.ip_network("%s/%d" % (addr, mask), strict=False))
    if rng.random() < 0.4:
        return str(addr)
    return "%s/%d" % (addr, mask)


def g_macaddr(rng):
    b = [rng.getrandbits(8) for _ in range(6)]
    r = rng.random()
    if r < 0.6:
        return ":".join("%02x" % x for x in b)
    if r < 0.8:
        return "-".join("%02X" % x for x in b)
    return "%02x%02x.%02x%02x.%02x%02x" % tuple(b)


def g_macaddr8(rng):
    n = 8 if rng.random() < 0.8 else 6
    return ":".join("%02x" % rng.getrandbits(8) for _ in range(n))


def g_money(rng):
    r = rng.random()
    if r < 0.1:
        return rng.choice(["-92233720368547758.08", "92233720368547758.07", "0", "-0.01"])
    cents = rng.randint(-10 ** rng.randint(1, 17), 10 ** rng.randint(1, 17))
    s = "-" if cents < 0 else ""
    cents = abs(cents)
    return "%s%d.%02d" % (s, cents // 100, cents % 100)


def g_bit8(rng):
    return "".join(rng.choice("01") for _ in range(8))


def g_varbit(rng):
    if rng.random() < 0.2:
        return "X" + "%X" % rng.getrandbits(16)
    return "".join(rng.choice("01") for _ in range(rng.randint(0, 100)))


def g_lsn(rng):
    return "%X/%X" % (rng.getrandbits(rng.choice([1, 8, 32])), rng.getrandbits(32))


def g_word(rng):
    w = rng.choice(WORDS)
    if rng.random() < 0.2:
        w += rng.choice(ASCII)
    return w


def g_tsvector(rng):
    parts = []
    for _ in range(rng.randint(0, 6)):
        r = rng.random()
        if r < 0.15:
            w = "'it''s a \\' w'"
        elif r < 0.25:
            w = "'two words'"
        else:
            w = g_word(rng)
        if rng.random() < 0.5:
            pos = ",".join("%d%s" % (rng.randint(1, 16383), rng.choice(["", "A", "B", "C", "D"]))
                           for _ in range(rng.randint(1, 3)))
            w += ":" + pos
        parts.append(w)
    return " ".join(parts)


def g_tsquery(rng, depth=0):
    r = rng.random()
    if depth > 2 or r < 0.4:
        w = g_word(rng)
        label = "*" if rng.random() < 0.2 else ""
        if rng.random() < 0.2:
            label += "".join(rng.sample("ABCD", rng.randint(1, 2)))
        if label:
            w += ":" + label
        if rng.random() < 0.1:
            w = "!" + w
        return w
    op = rng.choice([" & ", " | ", " <-> ", " <2> "])
    return "(" + g_tsquery(rng, depth + 1) + op + g_tsquery(rng, depth + 1) + ")"


def g_xml(rng):
    return rng.choice(['<a b="1">text &amp; more</a>', "<x>ü 😀 \"q\" 'a'</x>", "plain text",
                       "<![CDATA[<>&]]>", "<r><c/><c>1</c></r>", "", "<a>\n\t</a>",
                       '<?xml version="1.0"?><root/>', "<e a='{1,2}'>{NULL}</e>"])


def rand_coord(rng):
    r = rng.random()
    if r < 0.05:
        return rng.choice(["NaN", "Infinity", "-Infinity", "-0", "1e308", "5e-324"])
    if r < 0.6:
        return repr(round(rng.uniform(-1000, 1000), rng.randint(0, 4)))
    return rand_float8_text(rng)


def rand_finite_coord(rng):
    return repr(round(rng.uniform(-1000, 1000), rng.randint(0, 3)))


def g_point(rng):
    return "(%s,%s)" % (rand_coord(rng), rand_coord(rng))


def g_line(rng):
    a = rand_finite_coord(rng)
    b = rand_finite_coord(rng)
    if float(a) == 0 and float(b) == 0:
        a = "1"
    return "{%s,%s,%s}" % (a, b, rand_finite_coord(rng))


def g_lseg(rng):
    return "[(%s,%s),(%s,%s)]" % tuple(rand_finite_coord(rng) for _ in range(4))


def g_box(rng):
    return "(%s,%s),(%s,%s)" % tuple(rand_coord(rng) for _ in range(4))


def g_path(rng):
    pts = ",".join("(%s,%s)" % (rand_finite_coord(rng), rand_finite_coord(rng))
                   for _ in range(rng.randint(1, 5)))
    return ("[%s]" if rng.random() < 0.5 else "(%s)") % pts


def g_polygon(rng):
    return "(%s)" % ",".join("(%s,%s)" % (rand_finite_coord(rng), rand_finite_coord(rng))
                            for _ in range(rng.randint(1, 5)))


def g_circle(rng):
    return "<(%s,%s),%s>" % (rand_finite_coord(rng), rand_finite_coord(rng),
                             repr(abs(float(rand_finite_coord(rng)))))


def g_interval(rng):
    parts = []
    if rng.random() < 0.5:
        parts.append("%d years" % rng.randint(-5000, 5000))
    if rng.random() < 0.5:
        parts.append("%d mons" % rng.randint(-50, 50))
    if rng.random() < 0.5:
        parts.append("%d days" % rng.randint(-100000, 100000))
    if rng.random() < 0.6 or not parts:
        us = rng.randint(0, 10 ** 12)
        parts.append(rng.choice(["", "-"]) + fmt_time(rng, us % (86400 * 10 ** 6)))
    return " ".join(parts)


def range_text(lo, hi, rng, quote=False):
    if rng.random() < 0.05:
        return "empty"
    lb = rng.choice("[(")
    ub = rng.choice("])")
    if rng.random() < 0.1:
        lo = ""
        lb = "("
    if rng.random() < 0.1:
        hi = ""
        ub = ")"
    q = (lambda s: '"' + s + '"' if s else s) if quote else (lambda s: s)
    if lo != "" and hi != "" and lo == hi and (lb == "(" or ub == ")"):
        lb, ub = "[", "]"
    return "%s%s,%s%s" % (lb, q(lo), q(hi), ub)


def g_int4range(rng):
    a, b = sorted(rng.randint(-2 ** 31 + 2, 2 ** 31 - 2) if rng.random() < 0.3 else rng.randint(-100, 100)
                  for _ in range(2))
    return range_text(str(a), str(b), rng)


def g_int8range(rng):
    a, b = sorted(rng.randint(-2 ** 63 + 2, 2 ** 63 - 2) for _ in range(2))
    return range_text(str(a), str(b), rng)


def g_numrange(rng):
    a, b = sorted(decimal.Decimal(rand_numeric_text(rng, False)) for _ in range(2))
    return range_text(str(a), str(b), rng)


def sortable_ts(rng):
    jd = rand_jdn(rng, TS_MAX_JDN - 400)
    us = rng.randint(0, 86400 * 10 ** 6 - 1)
    return (jd, us)


def fmt_ts_tuple(rng, t):
    date, bc = fmt_date(t[0])
    tm = fmt_time(rng, t[1])
    return date[:-3] + " " + tm + " BC" if bc else date + " " + tm


def g_tsrange(rng):
    a, b = sorted(sortable_ts(rng) for _ in range(2))
    lo = fmt_ts_tuple(rng, a)
    hi = fmt_ts_tuple(rng, b)
    if rng.random() < 0.1:
        lo = "-infinity"
    if rng.random() < 0.1:
        hi = "infinity"
    return range_text(lo, hi, rng, quote=True)


def g_daterange(rng):
    a, b = sorted(rand_jdn(rng, DATE_MAX_JDN - 1) for _ in range(2))
    lo, hi = fmt_date(a)[0], fmt_date(b)[0]
    if rng.random() < 0.1:
        hi = "infinity"
    return range_text(lo, hi, rng, quote=True)


def multirange(g):
    def m(rng):
        return "{" + ",".join(g(rng) for _ in range(rng.randint(0, 4))) + "}"
    return m


MOODS = ["sad", "ok", "happy", 'wei"rd, {x}', "ü 😀", "NULL", " sp "]


def g_mood(rng):
    return rng.choice(MOODS)


def composite_field(s):
    if s is None:
        return ""
    return '"' + s.replace("\\", "\\\\").replace('"', '""') + '"'


def g_pair(rng):
    a = None if rng.random() < 0.1 else rand_int_text(-2 ** 31, 2 ** 31 - 1, INT4_EDGES)(rng)
    b = None if rng.random() < 0.1 else rand_string(rng, 15, 0)
    c = None if rng.random() < 0.1 else rand_numeric_text(rng, False)
    return "(%s,%s,%s)" % (composite_field(a), composite_field(b), composite_field(c))


def g_rec2(rng):
    p = None if rng.random() < 0.1 else g_pair(rng)
    tags = None if rng.random() < 0.1 else array_text(rng, T_TEXT, [rng.randint(0, 3)])
    rg = None if rng.random() < 0.1 else g_int4range(rng)
    ts = None if rng.random() < 0.1 else rand_timestamp(rng, False)
    return "(%s,%s,%s,%s)" % tuple(composite_field(x) for x in (p, tags, rg, ts))


def g_text(rng):
    return rand_string(rng)


def g_json(rng):
    return gen_json(rng, allow_nul=True)


def g_jsonb(rng):
    return gen_json(rng)


def g_json_extreme(rng):
    return gen_json(rng, extreme=True, allow_nul=True)


def g_jsonb_extreme(rng):
    return gen_json(rng, extreme=True)


def g_date(rng):
    if rng.random() < 0.05:
        return rng.choice(DATE_EDGES)
    return fmt_date(rand_jdn(rng, DATE_MAX_JDN))[0]


def g_time(rng):
    return fmt_time(rng, rand_time_us(rng))


def g_timetz(rng):
    return fmt_time(rng, rand_time_us(rng)) + rand_offset(rng)


T_INT2 = T("int2", "int", rand_int_text(-32768, 32767, INT2_EDGES), INT2_EDGES)
T_INT4 = T("int4", "int", rand_int_text(-2 ** 31, 2 ** 31 - 1, INT4_EDGES), INT4_EDGES)
T_INT8 = T("int8", "int", rand_int_text(-2 ** 63, 2 ** 63 - 1, INT8_EDGES), INT8_EDGES)
T_OID = T("oid", "int", rand_int_text(0, 2 ** 32 - 1, OID_EDGES), OID_EDGES)
T_DINT = T("dint", "string", rand_int_text(-2 ** 31, 2 ** 31 - 1, INT4_EDGES), INT4_EDGES)
T_FLOAT4 = T("float4", "float", lambda r: r.choice(FLOAT4_EDGES) if r.random() < 0.1 else rand_float4_text(r),
             FLOAT4_EDGES)
T_FLOAT8 = T("float8", "float", lambda r: r.choice(FLOAT8_EDGES) if r.random() < 0.1 else rand_float8_text(r),
             FLOAT8_EDGES)
SAFE_NUMERIC_EDGES = [e for e in NUMERIC_EDGES if len(e) <= 25 and "e" not in e]
RISKY_NUMERIC_EDGES = [e for e in NUMERIC_EDGES if e not in SAFE_NUMERIC_EDGES]
T_NUMERIC = T("numeric", "numeric", lambda r: rand_numeric_text(r, False), SAFE_NUMERIC_EDGES,
              extreme=lambda r: rand_numeric_text(r, True))
T_NUMERIC_20_5 = T("numeric(20,5)", "numeric",
                   lambda r: "%s%d.%s" % (r.choice(["", "-"]), r.randint(0, 10 ** r.randint(1, 15) - 1),
                                          rand_digits(r, r.randint(0, 8))),
                   ["0", "-0", "999999999999999.99999", "0.000005", "0.000004", "123.456789"])
T_BOOL = T("bool", "bool", g_bool, ["t", "f"])
T_TEXT = T("text", "string", g_text, WHOLE + ["".join(CONTROL), "".join(UNI), "".join(EMOJI),
                                             '"\'\\{}[],() ', "x" * 100000])
T_VARCHAR20 = T("varchar(20)", "string", lambda r: clip_chars(rand_string(r, 20, 0), 20),
                ["", "😀" * 20, "a" * 20, '"\\'])
T_VARCHAR = T("varchar", "string", g_text, ["", "NULL", "\u2028"])
T_BPCHAR5 = T("char(5)", "string", lambda r: clip_chars(rand_string(r, 5, 0), 5),
              ["", " ", "😀😀😀😀😀", "ab", "a\\\"'"])
T_BPCHAR3 = T("char(3)", "string", lambda r: clip_chars(rand_string(r, 3, 0), 3), ["", "NUL", "a b"])
T_BPCHAR = T("bpchar", "string", g_text, ["", "  trailing  ", "x"])
T_NAME = T("name", "string", lambda r: rand_string(r, 80, 0),
           ["", "x" * 63, "x" * 70, "é" * 40, "😀" * 20])
T_CHAR1 = T('"char"', "string", g_char1, ["", "\\377", "\\200", "a", "\\", '"'])
T_DTEXT = T("dtext", "string", g_text, ["", "NULL", "{}"])
T_BYTEA = T("bytea", "bytea", g_bytea, ["\\x", "\\x00", "\\x5c00", "\\xffff00", "\\x" + "ab" * 50000])
T_DATE = T("date", "date", g_date, DATE_EDGES)
T_TIME = T("time", "time", g_time, TIME_EDGES)
T_TIMETZ = T("timetz", "timetz", g_timetz, TIMETZ_EDGES)
T_TIMESTAMP = T("timestamp", "timestamp",
                lambda r: r.choice(TIMESTAMP_EDGES) if r.random() < 0.05 else rand_timestamp(r, False),
                TIMESTAMP_EDGES)
T_TIMESTAMPTZ = T("timestamptz", "timestamp",
                  lambda r: r.choice(TIMESTAMPTZ_EDGES) if r.random() < 0.05 else rand_timestamp(r, True),
                  TIMESTAMPTZ_EDGES)
T_INTERVAL = T("interval", "string", g_interval, INTERVAL_EDGES)
JSON_EDGES = ["{}", "[]", "null", "0", '""', '{"a":1,"a":2}', "[1e400, {\"a\":1e-400,\"b\":1,\"a\":2}]",
              "1e400", "-0", '"\\u00e9\\ud83d\\ude00"', '{"b":1,"1":2,"0":3}',
              '{"big": 12345678901234567890, "f": 1.0}', " [ 1 , 2 ] ", '"\\u0000"',
              '{"__proto__": {"x": 1}, "a": 1}', '{"a": 1, "__proto__": 5}', '"\\ud800"']
JSONB_EDGES = [e for e in JSON_EDGES if "\\u0000" not in e and "\\ud800" not in e]
SAFE_JSON_ELEMENTS = ["{}", "[]", "null", "0", '""', '"\\u00e9\\ud83d\\ude00"', " [ 1 , 2 ] ",
                      '{"big": 12345678901234567890, "f": 1.5, "s": "x\\ny"}', "true"]
T_JSON = T("json", "json", g_json, JSON_EDGES, extreme=g_json_extreme,
           array_edges=SAFE_JSON_ELEMENTS + ['"\\u0000"'])
T_JSONB = T("jsonb", "json", g_jsonb, JSONB_EDGES, extreme=g_jsonb_extreme, array_edges=SAFE_JSON_ELEMENTS)
T_UUID = T("uuid", "string", g_uuid, ["00000000-0000-0000-0000-000000000000",
                                      "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"])
T_INET = T("inet", "string", g_inet, ["0.0.0.0/0", "::/0", "::ffff:1.2.3.4", "255.255.255.255/32",
                                      "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"])
T_CIDR = T("cidr", "string", lambda r: g_inet(r, True), ["0.0.0.0/0", "::/0", "10.0.0.0/8"])
T_MACADDR = T("macaddr", "string", g_macaddr, ["00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff"])
T_MACADDR8 = T("macaddr8", "string", g_macaddr8, ["00:00:00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff"])
T_MONEY = T("money", "string", g_money, ["-92233720368547758.08", "92233720368547758.07", "0"])
T_BIT8 = T("bit(8)", "string", g_bit8, ["00000000", "11111111"])
T_VARBIT = T("varbit", "string", g_varbit, ["", "1", "X0"])
T_LSN = T("pg_lsn", "string", g_lsn, ["0/0", "FFFFFFFF/FFFFFFFF"])
T_TSVECTOR = T("tsvector", "string", g_tsvector, ["", "a:1A,2B b"])
T_TSQUERY = T("tsquery", "string", g_tsquery, ["a", "!(a & b) <-> c:*"])
T_XML = T("xml", "string", g_xml, ["<a/>", ""])
T_POINT = T("point", "string", g_point, ["(0,0)", "(NaN,Infinity)", "(-0,-0)", "(1e308,5e-324)"])
T_LINE = T("line", "string", g_line, ["{1,0,0}", "{0,1,-1.5}"])
T_LSEG = T("lseg", "string", g_lseg, ["[(0,0),(0,0)]"])
T_BOX = T("box", "string", g_box, ["(0,0),(0,0)", "(1,1),(-1,-1)"], delim=";")
T_PATH = T("path", "string", g_path, ["[(0,0)]", "((1,2),(3,4),(5,6))"])
T_POLYGON = T("polygon", "string", g_polygon, ["((0,0))", "((0,0),(1,1),(1,0))"])
T_CIRCLE = T("circle", "string", g_circle, ["<(0,0),0>", "<(1.5,-2),1e300>"])
T_INT4RANGE = T("int4range", "string", g_int4range, ["empty", "(,)", "[1,1]", "(,5]", "[-2147483648,2147483647)"])
T_INT8RANGE = T("int8range", "string", g_int8range, ["empty", "[9007199254740993,)"])
T_NUMRANGE = T("numrange", "string", g_numrange, ["empty", "[1e-100,1e100]", "(,)"])
T_TSRANGE = T("tsrange", "string", g_tsrange, ["empty", "[-infinity,infinity]", '["0044-03-15 BC",)'])
T_TSTZRANGE = T("tstzrange", "string", g_tsrange, ["empty", '["294276-12-31 23:59:59.999999+00",infinity]'])
T_DATERANGE = T("daterange", "string", g_daterange, ["empty", "[4714-11-24 BC,5874897-12-30]"])
T_INT4MULTI = T("int4multirange", "string", multirange(g_int4range), ["{}", "{[1,3),[5,7)}"])
T_INT8MULTI = T("int8multirange", "string", multirange(g_int8range), ["{}"])
T_NUMMULTI = T("nummultirange", "string", multirange(g_numrange), ["{}", "{(,)}"])
T_TSMULTI = T("tsmultirange", "string", multirange(g_tsrange), ["{}"])
T_TSTZMULTI = T("tstzmultirange", "string", multirange(g_tsrange), ["{}"])
T_DATEMULTI = T("datemultirange", "string", multirange(g_daterange), ["{}", "{[2020-01-01,infinity)}"])
T_MOOD = T("mood", "string", g_mood, MOODS)
T_PAIR = T("pair", "string", g_pair, ["(,,)", '(1,"",0)', '(-1,"a""b\\\\c",NaN)', "(,NULL,)"])
T_REC2 = T("rec2", "string", g_rec2, ["(,,,)", '("(1,x,2)","{a,NULL}",empty,infinity)'])


# ---------------------------------------------------------------------------
# array literals

def quote_elem(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def array_text(rng, t, shape, lbounds=None, null_prob=0.1, gen=None, values=None):
    """An array literal of the given shape (list of dimension lengths)."""
    gen = gen or t.gen
    it = iter(values) if values is not None else None

    def elem():
        if it is not None:
            v = next(it)
        else:
            v = None if rng.random() < null_prob else gen(rng)
        return "NULL" if v is None else quote_elem(v)

    def level(d):
        if d == len(shape):
            return elem()
        return "{" + t.delim.join(level(d + 1) for _ in range(shape[d])) + "}"

    if not shape or 0 in shape:
        return "{}"
    body = level(0)
    if lbounds:
        return "".join("[%d:%d]" % (lb, lb + n - 1) for lb, n in zip(lbounds, shape)) + "=" + body
    return body


def rand_shape(rng, ndims=None):
    if ndims is None:
        r = rng.random()
        ndims = 1 if r < 0.75 else (2 if r < 0.95 else 3)
    if ndims == 1:
        return [rng.randint(0, 6)]
    return [rng.randint(1, 3) for _ in range(ndims)]


def rand_lbounds(rng, shape):
    if rng.random() < 0.2:
        return [rng.randint(-5, 5) for _ in shape]
    return None


class Col:
    def __init__(self, name, t, array=False, ndims=None):
        self.name = name
        self.t = t
        self.array = array
        self.ndims = ndims

    @property
    def sql(self):
        return self.t.sql + ("[]" if self.array else "")

    def rand(self, rng, extreme=False):
        gen = self.t.extreme if extreme and self.t.extreme else self.t.gen
        if not self.array:
            return gen(rng)
        shape = rand_shape(rng, self.ndims)
        return array_text(rng, self.t, shape, rand_lbounds(rng, shape), gen=gen)


def edge_arrays(t, rng, edges):
    """Array literals exercising structure, with the given element edges."""
    out = ["{}", "{NULL}", array_text(rng, t, [len(edges)], values=edges) if edges else "{}"]
    if edges:
        e = edges
        out.append(array_text(rng, t, [2], [0], values=[e[0], None]))                  # [0:1]={x,NULL}
        out.append(array_text(rng, t, [2, 2], [-3, 5], values=[e[0], None, e[-1], e[len(e) // 2]]))
        out.append(array_text(rng, t, [1, 1, 1, 1, 1, 1], values=[e[-1]]))            # 6-D
        out.append(array_text(rng, t, [3, 1], values=[None, None, None]))
    return out


# ---------------------------------------------------------------------------
# schema

def tables(with_xml):
    A = True
    misc = [Col("c_bool", T_BOOL), Col("c_uuid", T_UUID), Col("c_money", T_MONEY), Col("c_bit", T_BIT8),
            Col("c_varbit", T_VARBIT), Col("c_lsn", T_LSN), Col("c_tsvector", T_TSVECTOR),
            Col("c_tsquery", T_TSQUERY), Col("c_interval", T_INTERVAL),
            Col("c_bool_arr", T_BOOL, A), Col("c_uuid_arr", T_UUID, A), Col("c_money_arr", T_MONEY, A),
            Col("c_bit_arr", T_BIT8, A), Col("c_varbit_arr", T_VARBIT, A), Col("c_lsn_arr", T_LSN, A),
            Col("c_tsvector_arr", T_TSVECTOR, A), Col("c_tsquery_arr", T_TSQUERY, A),
            Col("c_interval_arr", T_INTERVAL, A)]
    if with_xml:
        misc += [Col("c_xml", T_XML), Col("c_xml_arr", T_XML, A)]
    return {
        "fz_int": [Col("c_int2", T_INT2), Col("c_int4", T_INT4), Col("c_int8", T_INT8), Col("c_oid", T_OID),
                   Col("c_dint", T_DINT), Col("c_int2_arr", T_INT2, A), Col("c_int4_arr", T_INT4, A),
                   Col("c_int4_2d", T_INT4, A, 2), Col("c_int8_arr", T_INT8, A), Col("c_oid_arr", T_OID, A),
                   Col("c_dint_arr", T_DINT, A)],
        "fz_float": [Col("c_float4", T_FLOAT4), Col("c_float8", T_FLOAT8), Col("c_float4_arr", T_FLOAT4, A),
                     Col("c_float8_arr", T_FLOAT8, A), Col("c_float8_2d", T_FLOAT8, A, 2)],
        "fz_numeric": [Col("c_numeric", T_NUMERIC), Col("c_numeric_s", T_NUMERIC_20_5),
                       Col("c_numeric_arr", T_NUMERIC, A), Col("c_numeric_2d", T_NUMERIC, A, 2),
                       Col("c_numeric_s_arr", T_NUMERIC_20_5, A)],
        "fz_text": [Col("c_text", T_TEXT), Col("c_varchar20", T_VARCHAR20), Col("c_varchar", T_VARCHAR),
                    Col("c_bpchar5", T_BPCHAR5), Col("c_bpchar", T_BPCHAR), Col("c_name", T_NAME),
                    Col("c_char", T_CHAR1), Col("c_dtext", T_DTEXT), Col("c_text_arr", T_TEXT, A),
                    Col("c_text_2d", T_TEXT, A, 2), Col("c_varchar_arr", T_VARCHAR20, A),
                    Col("c_bpchar3_arr", T_BPCHAR3, A), Col("c_name_arr", T_NAME, A),
                    Col("c_char_arr", T_CHAR1, A), Col("c_dtext_arr", T_DTEXT, A)],
        "fz_bytea": [Col("c_bytea", T_BYTEA), Col("c_bytea_arr", T_BYTEA, A)],
        "fz_time": [Col("c_date", T_DATE), Col("c_time", T_TIME), Col("c_timetz", T_TIMETZ),
                    Col("c_timestamp", T_TIMESTAMP), Col("c_timestamptz", T_TIMESTAMPTZ),
                    Col("c_date_arr", T_DATE, A), Col("c_time_arr", T_TIME, A), Col("c_timetz_arr", T_TIMETZ, A),
                    Col("c_timestamp_arr", T_TIMESTAMP, A), Col("c_timestamptz_arr", T_TIMESTAMPTZ, A),
                    Col("c_timestamp_2d", T_TIMESTAMP, A, 2)],
        "fz_json": [Col("c_json", T_JSON), Col("c_jsonb", T_JSONB), Col("c_json_arr", T_JSON, A),
                    Col("c_jsonb_arr", T_JSONB, A), Col("c_jsonb_2d", T_JSONB, A, 2)],
        "fz_net": [Col("c_inet", T_INET), Col("c_cidr", T_CIDR), Col("c_macaddr", T_MACADDR),
                   Col("c_macaddr8", T_MACADDR8), Col("c_inet_arr", T_INET, A), Col("c_cidr_arr", T_CIDR, A),
                   Col("c_macaddr_arr", T_MACADDR, A), Col("c_macaddr8_arr", T_MACADDR8, A)],
        "fz_misc": misc,
        "fz_geo": [Col("c_point", T_POINT), Col("c_line", T_LINE), Col("c_lseg", T_LSEG), Col("c_box", T_BOX),
                   Col("c_path", T_PATH), Col("c_polygon", T_POLYGON), Col("c_circle", T_CIRCLE),
                   Col("c_point_arr", T_POINT, A), Col("c_line_arr", T_LINE, A), Col("c_lseg_arr", T_LSEG, A),
                   Col("c_box_arr", T_BOX, A), Col("c_path_arr", T_PATH, A), Col("c_polygon_arr", T_POLYGON, A),
                   Col("c_circle_arr", T_CIRCLE, A)],
        "fz_range": [Col("c_int4range", T_INT4RANGE), Col("c_int8range", T_INT8RANGE),
                     Col("c_numrange", T_NUMRANGE), Col("c_tsrange", T_TSRANGE), Col("c_tstzrange", T_TSTZRANGE),
                     Col("c_daterange", T_DATERANGE), Col("c_int4multirange", T_INT4MULTI),
                     Col("c_int8multirange", T_INT8MULTI), Col("c_nummultirange", T_NUMMULTI),
                     Col("c_tsmultirange", T_TSMULTI), Col("c_tstzmultirange", T_TSTZMULTI),
                     Col("c_datemultirange", T_DATEMULTI), Col("c_int4range_arr", T_INT4RANGE, A),
                     Col("c_numrange_arr", T_NUMRANGE, A), Col("c_tstzrange_arr", T_TSTZRANGE, A),
                     Col("c_daterange_arr", T_DATERANGE, A), Col("c_int4multirange_arr", T_INT4MULTI, A),
                     Col("c_datemultirange_arr", T_DATEMULTI, A)],
        "fz_udt": [Col("c_mood", T_MOOD), Col("c_pair", T_PAIR), Col("c_rec2", T_REC2),
                   Col("c_mood_arr", T_MOOD, A), Col("c_pair_arr", T_PAIR, A), Col("c_rec2_arr", T_REC2, A)],
        # big and deep arrays only
        "fz_big": [Col("c_int4_arr", T_INT4, A), Col("c_text_arr", T_TEXT, A), Col("c_numeric_arr", T_NUMERIC, A),
                   Col("c_float8_arr", T_FLOAT8, A), Col("c_jsonb_arr", T_JSONB, A),
                   Col("c_timestamptz_arr", T_TIMESTAMPTZ, A), Col("c_bool_arr", T_BOOL, A)],
    }


SCHEMA_PRELUDE = """SET client_encoding = 'UTF8';
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'wei"rd, {x}', 'ü 😀', 'NULL', ' sp ');
CREATE TYPE pair AS (a integer, b text, c numeric);
CREATE TYPE rec2 AS (p pair, tags text[], r int4range, ts timestamp);
CREATE DOMAIN dint AS integer;
CREATE DOMAIN dtext AS text;
CREATE TABLE fz_sentinel (id bigint PRIMARY KEY, note text);
"""


def sql_literal(s):
    return "'" + s.replace("'", "''") + "'"


# ---------------------------------------------------------------------------
# generate

class Gen:
    def __init__(self, seed, with_xml):
        self.rng = random.Random(seed)
        self.tables = tables(with_xml)
        self.next_id = 1
        self.groups = []

    def insert(self, table, rows):
        """rows: list of dicts col -> input text (None = NULL). Returns SQL."""
        cols = self.tables[table]
        names = ["id"] + [c.name for c in cols]
        out = []
        for row in rows:
            vals = [str(self.next_id)]
            self.next_id += 1
            for c in cols:
                v = row.get(c.name)
                vals.append("NULL" if v is None else sql_literal(v))
            out.append("(" + ", ".join(vals) + ")")
        return "INSERT INTO %s (%s) VALUES\n%s;\n" % (table, ", ".join(names), ",\n".join(out))

    def random_row(self, table, null_prob=0.08, extreme=False):
        row = {}
        for c in self.tables[table]:
            if self.rng.random() < null_prob:
                row[c.name] = None
            else:
                row[c.name] = c.rand(self.rng, extreme)
        return row

    def group(self, name, txs, risky=False):
        """txs: list of lists of (table, rows)."""
        sql = ["SET client_encoding = 'UTF8';\n"]
        nrows = 0
        for tx in txs:
            sql.append("BEGIN;\n")
            for table, rows in tx:
                if rows:
                    sql.append(self.insert(table, rows))
                    nrows += len(rows)
            sql.append("COMMIT;\n")
        self.groups.append({"name": name, "sql": "".join(sql), "rows": nrows, "transactions": len(txs),
                            "risky": risky})

    def build(self, scale):
        rng = self.rng
        big = {"fz_big"}
        # random values, several transactions per group
        per_tx = max(1, int(20 * scale))
        for g in range(3):
            txs = []
            for _ in range(4):
                txs.append([(t, [self.random_row(t) for _ in range(per_tx)])
                            for t in self.tables if t not in big])
            self.group("random-%d" % (g + 1), txs)
        # edge values: one row per edge of each column (others random)
        txs = []
        for t, cols in self.tables.items():
            if t in big:
                continue
            n = max(len(c.t.edges) for c in cols if not c.array)
            rows = []
            for i in range(n):
                row = self.random_row(t, null_prob=0.3)
                for c in cols:
                    if not c.array:
                        row[c.name] = c.t.edges[i] if i < len(c.t.edges) else None
                rows.append(row)
            # structural array edges
            arrs = {c.name: edge_arrays(c.t, rng, c.t.array_edges) for c in cols if c.array}
            for i in range(max((len(v) for v in arrs.values()), default=0)):
                row = {c.name: None for c in cols}
                for name, lits in arrs.items():
                    row[name] = lits[i] if i < len(lits) else None
                rows.append(row)
            txs.append([(t, rows)])
        self.group("edges", txs)
        # big and deep arrays
        txs = []
        for shape, lb in (([100000], None), ([2, 2, 2, 2, 2, 2], None), ([3, 3, 3, 3, 3, 3], [0, -1, 2, 0, 0, 1]),
                          ([1, 1, 1, 1, 1, 1], None), ([2000], [-1000]), ([50, 40], None)):
            row = {}
            for c in self.tables["fz_big"]:
                n = 1
                for d in shape:
                    n *= d
                sh = shape if n <= 20000 or c.t in (T_INT4, T_BOOL) else [2000]
                row[c.name] = array_text(rng, c.t, sh, lb if sh is shape else None, null_prob=0.05)
            txs.append([("fz_big", [row])])
        self.group("big-arrays", txs)
        # risky: values that could stop a decoder, each kind in its own group
        num_rows = [{"c_numeric": e, "c_numeric_arr": "{" + quote_elem(e) + "}"} for e in RISKY_NUMERIC_EDGES]
        self.group("numeric-extremes", [[("fz_numeric", [r])] for r in num_rows], risky=True)
        self.group("numeric-array-extremes",
                   [[("fz_numeric", [{"c_numeric_arr": array_text(rng, T_NUMERIC, [len(NUMERIC_EDGES)],
                                                                   values=NUMERIC_EDGES),
                                      "c_numeric_2d": array_text(rng, T_NUMERIC, [2, 2], [0, 0],
                                                                 values=["1e64", None, "-1e70", "1e-1000"])}])]],
                   risky=True)
        jrows = []
        jrows.append({"c_json_arr": array_text(rng, T_JSON, [len(JSON_EDGES)], values=JSON_EDGES),
                      "c_jsonb_arr": array_text(rng, T_JSONB, [len(JSONB_EDGES)], values=JSONB_EDGES),
                      "c_jsonb_2d": array_text(rng, T_JSONB, [2, 2], [0, 1],
                                               values=["1e400", None, '{"a":1,"a":[1e-400]}', "12345678901234567890"])})
        for e in JSON_NUM_EXTREME:
            jrows.append({"c_json_arr": array_text(rng, T_JSON, [3], values=[e, "[%s]" % e, '{"k":%s}' % e]),
                          "c_jsonb_arr": array_text(rng, T_JSONB, [3], values=[e, "[%s]" % e, '{"k":%s}' % e])})
        self.group("json-array-extremes", [[("fz_json", [r])] for r in jrows], risky=True)
        self.group("json-deep",
                   [[("fz_json", [{"c_json": deep_json(3000, "array"), "c_jsonb": deep_json(2000, "object"),
                                   "c_json_arr": array_text(rng, T_JSON, [2], values=[deep_json(600, "array"),
                                                                                      deep_json(600, "object")]),
                                   "c_jsonb_arr": array_text(rng, T_JSONB, [1], values=[deep_json(2000, "array")])}])]],
                   risky=True)
        # random values of the risky kinds
        txs = []
        for _ in range(4):
            txs.append([("fz_numeric", [self.random_row("fz_numeric", extreme=True) for _ in range(per_tx * 2)]),
                        ("fz_json", [self.random_row("fz_json", extreme=True) for _ in range(per_tx * 2)])])
        self.group("random-extremes", txs, risky=True)


def cmd_generate(args):
    gen = Gen(args.seed, args.xml)
    gen.build(args.scale)
    os.makedirs(args.out, exist_ok=True)
    schema = [SCHEMA_PRELUDE]
    for t, cols in gen.tables.items():
        schema.append("CREATE TABLE %s (id bigint PRIMARY KEY, %s);\n" %
                      (t, ", ".join("%s %s" % (c.name, c.sql) for c in cols)))
    with open(os.path.join(args.out, "schema.sql"), "w", encoding="utf-8") as f:
        f.write("".join(schema))
    manifest = {"seed": args.seed, "tables": {}, "groups": []}
    for t, cols in gen.tables.items():
        manifest["tables"][t] = [{"name": c.name, "sql": c.sql, "kind": c.t.kind,
                                  "array": c.array, "delim": c.t.delim} for c in cols]
    for i, g in enumerate(gen.groups):
        fn = "%02d_%s.sql" % (i + 1, g["name"])
        with open(os.path.join(args.out, fn), "w", encoding="utf-8") as f:
            f.write(g["sql"])
        manifest["groups"].append({"name": g["name"], "file": fn, "rows": g["rows"],
                                   "transactions": g["transactions"], "risky": g["risky"]})
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    for g in manifest["groups"]:
        print("%s %s %d %d %d" % (g["name"], g["file"], g["rows"], g["transactions"], int(g["risky"])))


# ---------------------------------------------------------------------------
# PostgreSQL's array output

def parse_pg_array(text, delim):
    """array_out text -> nested lists of element texts (None for NULL)."""
    i = 0
    n = len(text)
    if text.startswith("["):
        i = text.index("=") + 1

    def level():
        nonlocal i
        assert text[i] == "{", text[i:i + 20]
        i += 1
        out = []
        if text[i] == "}":
            i += 1
            return out
        while True:
            if text[i] == "{":
                out.append(level())
            elif text[i] == '"':
                i += 1
                buf = []
                while text[i] != '"':
                    if text[i] == "\\":
                        i += 1
                    buf.append(text[i])
                    i += 1
                i += 1
                out.append("".join(buf))
            else:
                j = i
                buf = []
                while text[i] != delim and text[i] != "}":
                    if text[i] == "\\":
                        i += 1
                    buf.append(text[i])
                    i += 1
                s = "".join(buf)
                out.append(None if text[j:i] == "NULL" else s)
            if text[i] == delim:
                i += 1
                continue
            assert text[i] == "}", text[i:i + 20]
            i += 1
            return out

    result = level()
    assert i == n, "trailing array text"
    return result


# ---------------------------------------------------------------------------
# JavaScript's number spelling and JSON.parse / JSON.stringify

def js_number(x, no_bigint=False):
    if x is None or math.isnan(x) or math.isinf(x):
        return "null"
    if x == 0:
        return "0"
    r = repr(x)
    neg = r.startswith("-")
    if neg:
        r = r[1:]
    m, e = (r.split("e") + ["0"])[:2]
    e = int(e)
    ip, fp = (m.split(".") + [""])[:2]
    allds = ip + fp
    lead = len(allds) - len(allds.lstrip("0"))
    n = len(ip) - lead + e
    d = allds.lstrip("0").rstrip("0")
    k = len(d)
    sign = "-" if neg else ""

    def expo():
        return d[0] + ("." + d[1:] if k > 1 else "") + "e" + ("-" if n - 1 < 0 else "+") + str(abs(n - 1))

    if k <= n <= 21:
        if no_bigint and abs(x) > MAX_SAFE:
            return sign + expo()
        return sign + d + "0" * (n - k)
    if 0 < n <= 21:
        return sign + d[:n] + "." + d[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + d
    return sign + expo()


class JsFloat:
    """A number JSON.parse made a double (None value: not finite, stringified as null)."""
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v if math.isfinite(v) else None


def _is_index_key(k):
    return k == "0" or (k[:1] in "123456789" and k.isdigit() and k.isascii() and int(k) < 2 ** 32 - 1)


def js_object(pairs):
    d = {}
    for k, v in pairs:
        if k == "__proto__":
            continue        # json-custom-numbers assigns it: it sets the prototype, no member
        d[k] = v
    idx = sorted((k for k in d if _is_index_key(k)), key=int)
    rest = [k for k in d if not _is_index_key(k)]
    return JsObj([(k, d[k]) for k in idx + rest])


class JsObj(list):
    pass


def _needs_escape(s):
    return any(c in '"\\' or ord(c) < 0x20 for c in s)


def js_written_string(s):
    """The string json-custom-numbers writes: JSON.stringify'd (unpaired
    surrogates escaped) if it holds a quote, a backslash or a control
    character, else verbatim, where Node's UTF-8 encoder turns an unpaired
    surrogate into U+FFFD (src/codec/json_js.c)."""
    if _needs_escape(s):
        return s
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in s)


def _js_strings(v):
    if isinstance(v, str):
        return js_written_string(v)
    if isinstance(v, JsObj):
        return JsObj([(js_written_string(k), _js_strings(x)) for k, x in v])
    if isinstance(v, list):
        return [_js_strings(x) for x in v]
    return v


def js_parse(text):
    """BigIntJSON.stringify(BigIntJSON.parse(text)) as a tree: integer
    literals exact (BigInt beyond 2^53), the rest doubles, objects as
    JavaScript fills them, strings as they are written."""
    return _js_strings(json.loads(text, parse_int=int, parse_float=lambda s: JsFloat(float(s)),
                                  object_pairs_hook=js_object))


def js_string(s):
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif c < 0x20:
            out.append({8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}.get(c, "\\u%04x" % c))
        elif 0xD800 <= c <= 0xDFFF:
            out.append("\\u%04x" % c)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def js_stringify(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, JsFloat):
        return js_number(v.v)
    if isinstance(v, str):
        return js_string(v)
    if isinstance(v, JsObj):
        return "{" + ",".join(js_string(k) + ":" + js_stringify(x) for k, x in v) + "}"
    if isinstance(v, list):
        return "[" + ",".join(js_stringify(x) for x in v) + "]"
    raise TypeError(type(v))


# ---------------------------------------------------------------------------
# the stored change text, numbers kept as written

class Raw:
    """A JSON number as stored: its text."""
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    @property
    def is_int(self):
        return not any(c in self.text for c in ".eE")

    def value(self):
        return int(self.text) if self.is_int else float(self.text)


class Pairs(list):
    """A stored JSON object: its members in order, duplicates kept."""

    def get(self, key, default=None):
        for k, v in self:
            if k == key:
                return v
        return default


def bad_constant(name):
    raise ValueError("invalid JSON constant %s" % name)


def parse_stored(text):
    return json.loads(text, parse_int=Raw, parse_float=Raw, parse_constant=bad_constant,
                      object_pairs_hook=Pairs)


def ser_stored(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, Raw):
        return v.text
    if isinstance(v, str):
        return js_string(v)
    if isinstance(v, Pairs):
        return "{" + ",".join(js_string(k) + ":" + ser_stored(x) for k, x in v) + "}"
    if isinstance(v, list):
        return "[" + ",".join(ser_stored(x) for x in v) + "]"
    raise TypeError(type(v))


def short(s, n=160):
    if s is None:
        return "NULL"
    s = s if isinstance(s, str) else str(s)
    r = s.encode("unicode_escape").decode("ascii") if any(ord(c) < 32 for c in s) else s
    if len(r) > n:
        return r[:n] + "...(%d chars)" % len(s)
    return r


# ---------------------------------------------------------------------------
# expectations

NONFINITE = {"NaN", "Infinity", "-Infinity"}


class Mismatch(Exception):
    def __init__(self, category, expected, got, where=""):
        self.category = category
        self.expected = expected
        self.got = got
        self.where = where


def ulp_close(g, e, ulps):
    if e == 0:
        return g == 0
    return abs(g - e) <= ulps * math.ulp(e)


def check_number(got, exp, where, spelled, ulps=1):
    """exp: float or None (null)."""
    if exp is None:
        if got is not None:
            raise Mismatch("value", "null", ser_stored(got), where)
        return
    if not isinstance(got, Raw):
        raise Mismatch("value", js_number(exp), ser_stored(got), where)
    g = float(got.text)
    if not math.isfinite(g) or not ulp_close(g, exp, ulps):
        raise Mismatch("value", js_number(exp), got.text, where)
    if spelled is not None and got.text != spelled:
        raise Mismatch("spelling", spelled, got.text, where)


def fact_float(f):
    if f is None or f in ("Infinity", "-Infinity", "NaN"):
        return None
    return float(decimal.Decimal(f))


def check_scalar(kind, text, fact, got, where):
    """Raises Mismatch unless got is the encoding of PG output text (fact: epoch ms text)."""
    if kind == "int":
        if not (isinstance(got, Raw) and got.is_int and int(got.text) == int(text)):
            raise Mismatch("value", text, ser_stored(got), where)
        return
    if kind in ("float", "numeric"):
        exp = None if text in NONFINITE else float(text)
        if exp is not None and not math.isfinite(exp):
            exp = None
        check_number(got, exp, where, js_number(exp, no_bigint=(kind == "numeric")) if exp is not None else None)
        return
    if kind == "bool":
        if got is not (text == "t"):
            raise Mismatch("value", "true" if text == "t" else "false", ser_stored(got), where)
        return
    if kind in ("string", "json"):
        if got != text:
            raise Mismatch("value", js_string(text), ser_stored(got), where)
        return
    if kind == "bytea":
        data = list(bytes.fromhex(text[2:]))
        ok = (isinstance(got, Pairs) and len(got) == 2 and got.get("type") == "Buffer"
              and isinstance(got.get("data"), list) and len(got.get("data")) == len(data)
              and all(isinstance(x, Raw) and x.is_int and int(x.text) == b for x, b in zip(got.get("data"), data)))
        if not ok:
            raise Mismatch("value", '{"type":"Buffer","data":[%d bytes]}' % len(data), ser_stored(got), where)
        return
    if kind == "timestamp":
        check_number(got, fact_float(fact), where, None, ulps=2)
        return
    if kind == "date":
        check_number(got, fact_float(fact), where, None, ulps=0)
        return
    if kind in ("time", "timetz"):
        ms = math.floor(decimal.Decimal(fact))
        if kind == "timetz" and (ms < 0 or ms > 86400000):
            ms %= 86400000
        if not (isinstance(got, Raw) and got.is_int and int(got.text) == ms):
            raise Mismatch("value", str(ms), ser_stored(got), where)
        return
    raise ValueError(kind)


def compare_js(exp, got, path):
    """exp: js_parse tree; got: stored tree. Semantic comparison."""
    if isinstance(exp, JsObj):
        if not isinstance(got, Pairs):
            raise Mismatch("value", js_stringify(exp), ser_stored(got), path)
        keys = [k for k, _ in got]
        if len(set(keys)) != len(keys):
            raise Mismatch("value", js_stringify(exp), ser_stored(got) + "  (duplicate keys)", path)
        gd = dict(got)
        if set(gd) != set(k for k, _ in exp):
            raise Mismatch("value", js_stringify(exp), ser_stored(got), path)
        for k, v in exp:
            compare_js(v, gd[k], path + "." + k)
        return
    if isinstance(exp, list):
        if not isinstance(got, list) or isinstance(got, Pairs) or len(got) != len(exp):
            raise Mismatch("value", js_stringify(exp), ser_stored(got), path)
        for i, (e, g) in enumerate(zip(exp, got)):
            compare_js(e, g, "%s[%d]" % (path, i))
        return
    if isinstance(exp, JsFloat):
        check_number(got, exp.v, path, None)
        return
    if isinstance(exp, bool) or exp is None or isinstance(exp, str):
        if got is not exp and not (isinstance(exp, str) and got == exp):
            raise Mismatch("value", js_stringify(exp), ser_stored(got), path)
        return
    if isinstance(exp, int):
        if not isinstance(got, Raw) or got.value() != exp or (not got.is_int and abs(exp) > MAX_SAFE):
            raise Mismatch("value", str(exp), ser_stored(got), path)
        return
    raise TypeError(type(exp))


def check_json_element(text, got, where):
    exp = js_parse(text)
    compare_js(exp, got, where)
    spelled = js_stringify(exp)
    if ser_stored(got) != spelled:
        raise Mismatch("spelling", spelled, ser_stored(got), where)


def check_value(col, text, fact, got, where):
    """Check one column value (scalar or array). Raises Mismatch."""
    kind = col["kind"]
    if text is None:
        if got is not None:
            raise Mismatch("value", "null", ser_stored(got), where)
        return
    if col["array"]:
        nested = parse_pg_array(text, col["delim"])
        facts = iter(json.loads(fact) or []) if fact is not None else None
        check_array(col, nested, facts, got, where)
        return
    check_kind(col, kind, text, fact, got, where)


def check_kind(col, kind, text, fact, got, where):
    check_scalar(kind, text, fact, got, where)


def check_array(col, nested, facts, got, where):
    if not isinstance(got, list) or isinstance(got, Pairs) or len(got) != len(nested):
        raise Mismatch("value", "array of %d" % len(nested), ser_stored(got), where)
    for i, (e, g) in enumerate(zip(nested, got)):
        w = "%s[%d]" % (where, i)
        if isinstance(e, list):
            check_array(col, e, facts, g, w)
            continue
        f = next(facts) if facts is not None else None
        if e is None:
            if g is not None:
                raise Mismatch("value", "null", ser_stored(g), w)
            continue
        if col["kind"] == "json":
            check_json_element(e, g, w)
        else:
            check_kind(col, col["kind"], e, f, g, w)


# ---------------------------------------------------------------------------
# check

# The decoder formats values with these settings, whatever the server's
# (decoder_worker.c); PostgreSQL's output to compare with is under the same.
DECODER_SETTINGS = ("-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=postgres -c extra_float_digits=1 "
                    "-c bytea_output=hex -c lc_monetary=C")


def psql_lines(args, sql):
    env = {k: v for k, v in os.environ.items() if k not in ("PGTZ", "PGDATESTYLE", "PGOPTIONS")}
    env["PGCLIENTENCODING"] = "UTF8"
    env["PGOPTIONS"] = DECODER_SETTINGS
    out = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", args.host,
                          "-p", str(args.port), "-d", args.db, "-c", sql],
                         stdout=subprocess.PIPE, env=env, check=True)
    return out.stdout.decode("utf-8").split("\n")


FACT_KINDS = {"timestamp", "date", "time", "timetz"}


def export_table(args, table, cols):
    # the type's output function, as pgoutput calls it (col::text is not always
    # that: bool, bpchar, inet, xml have casts of their own)
    # (num_nonnulls: "IS NOT NULL" of a composite asks whether every field is)
    texts = ", ".join("CASE WHEN num_nonnulls({0}) = 1 THEN format('%s', {0}) END".format(c["name"])
                      for c in cols)
    facts = []
    for c in cols:
        if c["kind"] not in FACT_KINDS:
            facts.append("NULL")
        elif c["array"]:
            facts.append("(SELECT json_agg((extract(epoch FROM e) * 1000)::text ORDER BY o) "
                         "FROM unnest(%s) WITH ORDINALITY u(e, o))::text" % c["name"])
        else:
            facts.append("(extract(epoch FROM %s) * 1000)::text" % c["name"])
    sql = ("SELECT json_build_array(id, to_json(ARRAY[%s]::text[]), to_json(ARRAY[%s]::text[])) "
           "FROM %s ORDER BY id" % (texts, ", ".join(facts), table))
    rows = {}
    for line in psql_lines(args, sql):
        if line:
            rid, t, f = json.loads(line)
            rows[rid] = (t, f)
    return rows


def cmd_check(args):
    with open(os.path.join(args.dir, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    tables = manifest["tables"]
    pg = {t: export_table(args, t, cols) for t, cols in tables.items()}
    stored = {}          # (table, id) -> list of row objects
    unparsable = []
    other = 0
    # (no ->> here: a json value holding \u0000 cannot be converted to text)
    for line in psql_lines(args, 'SELECT change::text FROM "zero_0/cdc"."changeLog" '
                                 'ORDER BY watermark COLLATE "C", pos'):
        if not line or line.startswith('{"tag":"begin"') or line.startswith('{"tag":"commit"'):
            continue
        try:
            ch = parse_stored(line)
        except (ValueError, RecursionError) as e:
            unparsable.append((str(e), line))
            continue
        if not isinstance(ch, Pairs) or ch.get("tag") != "insert":
            continue
        rel = ch.get("relation")
        name = rel.get("name") if isinstance(rel, Pairs) else None
        new = ch.get("new")
        rid = new.get("id") if isinstance(new, Pairs) else None
        if name not in tables:
            continue            # not a fuzz table (the sentinel)
        if not isinstance(rid, Raw):
            other += 1
            continue
        stored.setdefault((name, int(rid.text)), []).append(new)

    expected_rows = sum(len(r) for r in pg.values())
    missing = []
    duplicate = []
    checked = 0
    mismatches = []
    for t, cols in tables.items():
        for rid, (texts, facts) in pg[t].items():
            copies = stored.pop((t, rid), [])
            if not copies:
                missing.append((t, rid))
                continue
            if len(copies) > 1:
                duplicate.append((t, rid, len(copies)))
            new = copies[0]
            keys = [k for k, _ in new]
            if len(keys) != len(set(keys)):
                mismatches.append(("value", t, "(row)", "-", rid, "-", "-", "one member per column",
                                   "duplicate members"))
            members = dict(new)
            for c, text, fact in zip(cols, texts, facts):
                checked += 1
                where = c["name"]
                if c["name"] not in members:
                    mismatches.append(("value", t, c["name"], c["sql"], rid, text, where,
                                       "present", "column missing from the row"))
                    continue
                try:
                    check_value(c, text, fact, members[c["name"]], where)
                except Mismatch as m:
                    mismatches.append((m.category, t, c["name"], c["sql"], rid, text, m.where, m.expected, m.got))
                except (ValueError, AssertionError, TypeError, decimal.InvalidOperation) as e:
                    mismatches.append(("checker", t, c["name"], c["sql"], rid, text, where,
                                       "checkable value", "%s: %s" % (type(e).__name__, e)))
    extra = sum(len(v) for v in stored.values())

    def count(cat):
        return sum(1 for m in mismatches if m[0] == cat)

    print("RESULT rows_expected=%d" % expected_rows)
    print("RESULT rows_stored=%d" % (expected_rows - len(missing)))
    print("RESULT missing=%d" % len(missing))
    print("RESULT duplicate=%d" % len(duplicate))
    print("RESULT unknown=%d" % (extra + other))
    print("RESULT unparsable=%d" % len(unparsable))
    print("RESULT values_checked=%d" % checked)
    print("RESULT value_mismatches=%d" % (count("value") + count("checker")))
    print("RESULT spelling_mismatches=%d" % count("spelling"))

    # summary: mismatches per category and SQL type
    summary = {}
    for m in mismatches:
        summary[(m[0], m[3])] = summary.get((m[0], m[3]), 0) + 1
    for (cat, sql), n in sorted(summary.items()):
        print("SUMMARY %s %s: %d" % (cat, sql, n))
    if missing:
        print("MISSING %d rows, first: %s" % (len(missing), ", ".join("%s id=%d" % m for m in missing[:10])))
    if duplicate:
        print("DUPLICATE %d rows, first: %s" % (len(duplicate), ", ".join("%s id=%d x%d" % d for d in duplicate[:10])))
    for err, line in unparsable[:3]:
        print("UNPARSABLE %s: %s" % (err, short(line, 300)))

    # details: a few per (category, column), at most --max-report
    shown = {}
    printed = 0
    for m in mismatches:
        cat, t, cname, sql, rid, text, where, exp, got = m
        key = (cat, t, cname)
        if shown.get(key, 0) >= args.per_column or printed >= args.max_report:
            continue
        shown[key] = shown.get(key, 0) + 1
        printed += 1
        print("MISMATCH [%s] type=%s %s.%s id=%s at %s\n    pg text:  %s\n    expected: %s\n    got:      %s"
              % (cat, sql, t, cname, rid, where, short(text), short(exp), short(got)))
    if printed < len(mismatches):
        print("MISMATCH ... %d more not shown" % (len(mismatches) - printed))
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--seed", type=int, required=True)
    g.add_argument("--out", required=True)
    g.add_argument("--scale", type=float, default=1.0)
    g.add_argument("--xml", action="store_true")
    c = sub.add_parser("check")
    c.add_argument("--dir", required=True)
    c.add_argument("--host", required=True)
    c.add_argument("--port", required=True)
    c.add_argument("--db", default="postgres")
    c.add_argument("--max-report", type=int, default=40)
    c.add_argument("--per-column", type=int, default=2)
    args = ap.parse_args()
    if args.cmd == "generate":
        cmd_generate(args)
        return 0
    return cmd_check(args)


if __name__ == "__main__":
    sys.exit(main())
