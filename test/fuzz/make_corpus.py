#!/usr/bin/env python3
"""Write the seed corpora of the fuzz targets from real data.

    test/fuzz/make_corpus.py [TRANSCRIPT]

Sources: zero-cache 1.9.0's wire transcript (TRANSCRIPT, by default the
repository's docs/zero-transcript.txt: the HTTP heads, websocket frames and
change messages of a replication-manager and a stock view-syncer) and the
golden change log (test/golden/changelog.jsonl: what zero-cache stores for a
workload of every value type and schema change, its "change" column the
change JSON; changelog.labels.tsv names its transactions).

Writes test/fuzz/corpus/<target>/real_* (removing the real_* files of an
earlier run, leaving the hand-written seeds alone): a few dozen small files
per target, for json_read, json_js, change_message, replica, websocket,
http and watermark. The output is committed; the script documents where it
came from and rewrites it when a source changes. Deterministic.
"""
import json
import os
import re
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
CORPUS = os.path.join(ROOT, 'test', 'fuzz', 'corpus')
GOLDEN = os.path.join(ROOT, 'test', 'golden')
TRANSCRIPT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, 'docs', 'zero-transcript.txt')

# each file at most this many bytes, at most this many files per target
MAX_FILE = 4096
MAX_FILES = 40

# ---------------------------------------------------------------- sources


def golden_transactions():
    """[(label, watermark, [change text])] in log order."""
    labels = {}
    with open(os.path.join(GOLDEN, 'changelog.labels.tsv')) as f:
        for line in f:
            if line.startswith('#') or not line.strip():
                continue
            tx, label, desc = line.rstrip('\n').split('\t', 2)
            labels[int(tx)] = (label, desc)
    txs = []
    with open(os.path.join(GOLDEN, 'changelog.jsonl')) as f:
        for line in f:
            row = json.loads(line)
            tag = json.loads(row['change'])['tag']
            if tag == 'begin':
                txs.append([row['watermark'], []])
            txs[-1][1].append(row['change'])
    return [(labels.get(i, ('T?', ''))[0], w, changes) for i, (w, changes) in enumerate(txs)]


def transcript_connections():
    """Each connection's HTTP request head and frames, in order:
    {'head': [lines], 'frames': [(direction, opcode, payload bytes)]}."""
    conns = []
    current = {}
    head_of = None
    frame = re.compile(r'^\[conn (\d+)\] \+[\d.]+s (S->C|C->S) #\d+ (text|close|ping|pong)( masked)? len=(\d+): ?(.*)$')
    with open(TRANSCRIPT, encoding='utf-8') as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('# ws-logging-proxy'):
                current = {}
            m = re.match(r'^\[conn (\d+)\] \+[\d.]+s accepted', line)
            if m:
                c = {'head': [], 'frames': []}
                current[m.group(1)] = c
                conns.append(c)
                head_of = None
                continue
            m = re.match(r'^\[conn (\d+)\] \+[\d.]+s C->S HTTP head:', line)
            if m and m.group(1) in current:
                head_of = current[m.group(1)]
                continue
            if head_of is not None and line.startswith('    '):
                head_of['head'].append(line[4:])
                continue
            head_of = None
            m = frame.match(line)
            if m and m.group(1) in current:
                kind, length, shown = m.group(3), int(m.group(5)), m.group(6)
                if kind == 'text':
                    payload = shown.encode('utf-8')
                elif kind == 'close':
                    cm = re.match(r'code=(\d+) reason="(.*)"$', shown)
                    payload = struct.pack('>H', int(cm.group(1))) + cm.group(2).encode() if cm else b''
                else:
                    payload = b''
                if len(payload) != length:
                    continue        # shown shortened: not the real frame
                opcode = {'text': 1, 'close': 8, 'ping': 9, 'pong': 10}[kind]
                current[m.group(1)]['frames'].append((m.group(2), opcode, payload))
    return conns


def transcript_request_lines():
    """The probes' "GET ws://host/path" lines."""
    out = []
    with open(TRANSCRIPT, encoding='utf-8') as f:
        for line in f:
            m = re.match(r'^GET ws://([^/]+)(/\S*)$', line.strip())
            if m:
                out.append((m.group(1), m.group(2)))
    return out

# ---------------------------------------------------------------- writing


written = {}


def put(target, name, data):
    if isinstance(data, str):
        data = data.encode('utf-8')
    if len(data) > MAX_FILE or len(written.get(target, [])) >= MAX_FILES:
        return
    written.setdefault(target, []).append(('real_' + re.sub(r'[^A-Za-z0-9_.-]', '_', name), data))


def flush():
    for target, files in sorted(written.items()):
        d = os.path.join(CORPUS, target)
        os.makedirs(d, exist_ok=True)
        for old in os.listdir(d):
            if old.startswith('real_'):
                os.remove(os.path.join(d, old))
        seen = set()
        for name, data in files:
            assert name not in seen, name
            seen.add(name)
            with open(os.path.join(d, name), 'wb') as f:
                f.write(data)
        print('%-22s %3d files, %6d bytes' % (target, len(files), sum(len(d) for _, d in files)))


def ws_frame(opcode, payload, mask):
    head = bytes([0x80 | opcode])
    n = len(payload)
    mbit = 0x80 if mask else 0
    if n < 126:
        head += bytes([mbit | n])
    elif n < 65536:
        head += bytes([mbit | 126]) + struct.pack('>H', n)
    else:
        head += bytes([mbit | 127]) + struct.pack('>Q', n)
    if mask:
        key = bytes([0x37, 0xfa, 0x21, 0x3d])
        payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
        head += key
    return head + payload


def lsn_bytes(text):
    hi, lo = text.split('/')
    return struct.pack('>Q', (int(hi, 16) << 32) | int(lo, 16))

# ---------------------------------------------------------------- targets


def main():
    txs = golden_transactions()
    conns = transcript_connections()
    by_label = {}
    for label, w, changes in txs:
        by_label.setdefault(label, []).append((w, changes))

    # one change of each tag (the smallest), and the first of every T-label's first change
    first_of_tag = {}
    for label, w, changes in txs:
        for c in changes:
            tag = json.loads(c)['tag']
            if tag not in first_of_tag or len(c) < len(first_of_tag[tag][1]):
                first_of_tag[tag] = (label, c, w)
    server_texts = [p for conn in conns for d, op, p in conn['frames'] if d == 'S->C' and op == 1]

    # json_read and json_js: every change tag's text, the value kinds of T01-T09,
    # the wire messages of each type, an ack
    for tag, (label, c, _) in sorted(first_of_tag.items()):
        put('fuzz_json_read', 'change_' + tag, c)
    for label in ('T01', 'T02', 'T03', 'T07', 'T09'):
        for w, changes in by_label[label]:
            put('fuzz_json_read', 'values_' + label, changes[1])
            put('fuzz_json_js', 'values_' + label, changes[1])
            new = json.loads(changes[1])['new']
            # the json/jsonb columns: JSON texts as Postgres wrote them
            for col in ('c_json', 'c_jsonb'):
                if isinstance(new.get(col), str):
                    put('fuzz_json_js', '%s_%s' % (col, label), new[col])
    seen_types = set()
    for p in server_texts:
        msg = json.loads(p)['msg']
        kind = msg[0] if msg[0] != 'data' else 'data_' + msg[1]['tag']
        if kind in seen_types:
            continue
        seen_types.add(kind)
        put('fuzz_json_read', 'wire_' + kind, p)
        put('fuzz_json_js', 'wire_' + kind, p)
    put('fuzz_json_read', 'wire_ack', '{"ack":21}')

    # change_message: the commit LSN (8 bytes, big-endian) and a change of each tag
    for tag, (label, c, w) in sorted(first_of_tag.items()):
        lsn = b'\x00\x00\x00\x00\x2a\xd2\xc2\xc8'
        for w2, changes in by_label.get(label, []):
            b = json.loads(changes[0])
            if 'commitLsn' in b:
                lsn = lsn_bytes(b['commitLsn'])
        put('fuzz_change_message', 'golden_' + tag, lsn + c.encode())

    # replica: options byte, then transactions as change lines (begin with the
    # golden watermark) or as the transcript's wire messages
    def tx_lines(w, changes):
        out = []
        for c in changes:
            obj = json.loads(c)
            if obj['tag'] in ('begin', 'commit'):
                c = '{"tag":"%s","watermark":"%s"}' % (obj['tag'], w)
            out.append(c)
        return out

    def replica_seed(name, labels, options):
        lines = []
        for label in labels:
            for w, changes in by_label[label]:
                lines += tx_lines(w, changes)
        put('fuzz_replica', name, bytes([options]) + '\n'.join(lines).encode() + b'\n')

    # options: 1 serving replica, 2 initial tables, 4 go on after a failure, 8 flush each commit
    replica_seed('golden_values', ['T01', 'T10', 'T11', 'T12'], 0x0d)
    replica_seed('golden_nulls_extremes', ['T08', 'T13', 'T16'], 0x05)
    replica_seed('golden_full_identity', ['T18', 'T19', 'T20', 'T21'], 0x0f)
    replica_seed('golden_index_identity', ['T22', 'T23', 'T24', 'T25', 'T35', 'T36'], 0x07)
    replica_seed('golden_toast', ['T26', 'T27', 'T28', 'T32', 'T33', 'T34'], 0x05)
    replica_seed('golden_multi_statement', ['T18', 'T22', 'T30'], 0x07)
    replica_seed('golden_create_table', ['T37', 'T38', 'T39', 'T40', 'T41', 'T42'], 0x0d)
    replica_seed('golden_alter', ['T37', 'T38', 'T43', 'T44', 'T45', 'T46'], 0x05)
    replica_seed('golden_rename_index', ['T37', 'T38', 'T47', 'T48', 'T49', 'T50', 'T51', 'T52'], 0x0d)
    replica_seed('golden_type_drop', ['T37', 'T38', 'T47', 'T48', 'T53', 'T54', 'T55', 'T56'], 0x07)
    replica_seed('golden_ddl_in_tx', ['T57'], 0x0f)
    replica_seed('golden_backfill', ['T18', 'T58', 'BACKFILL', 'T59'], 0x06)
    replica_seed('golden_backfill_serving', ['T18', 'T58', 'BACKFILL', 'T59'], 0x0f)
    replica_seed('golden_point', ['T61', 'T62'], 0x05)
    replica_seed('golden_big_numeric', ['T60', 'T63'], 0x04)
    # a rolled-back transaction, and changes outside one
    w, changes = by_label['T18'][0]
    put('fuzz_replica', 'golden_rollback', bytes([0x07]) + '\n'.join(
        tx_lines(w, changes)[:-1] + ['{"tag":"rollback"}'] + tx_lines(w, changes)).encode() + b'\n')
    put('fuzz_replica', 'golden_outside_tx', bytes([0x06]) + '\n'.join(changes[1:]).encode() + b'\n')
    # the transcript's connections: the change stream as the view-syncer got it
    for i, conn in enumerate(conns):
        msgs = [json.dumps(json.loads(p)['msg'], separators=(',', ':'))
                for d, op, p in conn['frames'] if d == 'S->C' and op == 1]
        # as many whole transactions as fit
        while len('\n'.join(msgs)) > MAX_FILE - 2 and msgs:
            msgs.pop()
            while msgs and json.loads(msgs[-1])[0] != 'commit':
                msgs.pop()
        if any(json.loads(m)[0] in ('begin', 'data') for m in msgs):
            put('fuzz_replica', 'transcript_conn%d' % i, bytes([0x0f if i % 2 else 0x05]) + '\n'.join(msgs).encode() + b'\n')

    # websocket: each connection's frames as a peer sends them: the server's
    # (unmasked, read by a client: options bit 0 clear) and the client's
    # (masked, read by the server: bit 0 set); bits 1-2: a 64 kB limit
    for i, conn in enumerate(conns):
        for direction, opt, mask in (('S->C', 0x06, False), ('C->S', 0x07, True)):
            stream = b''.join(ws_frame(op, p, mask) for d, op, p in conn['frames'] if d == direction)
            if stream:
                while len(stream) > MAX_FILE - 1:
                    stream = stream[:-1]    # a frame cut short is a seed too
                put('fuzz_websocket', 'transcript_conn%d_%s' % (i, 'server' if not mask else 'client'),
                    bytes([opt]) + stream)

    # http: the view-syncer's request heads, and the probes' request lines
    # (first byte 3: the 8 kB head limit)
    heads = set()
    for i, conn in enumerate(conns):
        if conn['head']:
            head = '\r\n'.join(conn['head']) + '\r\n\r\n'
            if head not in heads:
                heads.add(head)
                put('fuzz_http', 'transcript_conn%d' % i, b'\x03' + head.encode())
    for j, (host, path) in enumerate(transcript_request_lines()):
        put('fuzz_http', 'probe_%d' % j, b'\x03' + ('GET %s HTTP/1.1\r\nHost: %s\r\n\r\n' % (path, host)).encode())

    # watermark: the real ones (text)
    marks = set()
    for label, w, _ in txs:
        marks.add(w)
    for p in server_texts:
        for m in re.findall(r'"(?:commitWatermark|watermark)":"([0-9a-z]+)"', p.decode()):
            marks.add(m)
    for m in sorted(marks, key=lambda m: (len(m), m))[::6]:
        put('fuzz_watermark', m, m)

    flush()


if __name__ == '__main__':
    main()
