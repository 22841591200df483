-- Every built-in value encoding, compared with hand-written expected JSON
-- (docs/zero-protocol.md §3.7; the corrections of test/golden/README.md).
SET client_encoding = 'UTF8';
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE pair AS (a integer, b text);
CREATE TABLE all_types (
  id bigint PRIMARY KEY,
  c_int2 smallint, c_int4 integer, c_int8 bigint, c_oid oid,
  c_float4 real, c_float8 double precision, c_numeric numeric, c_bool boolean,
  c_text text, c_varchar varchar(10), c_char char(5), c_bytea bytea,
  c_date date, c_time time, c_timetz timetz, c_timestamp timestamp, c_timestamptz timestamptz,
  c_interval interval, c_uuid uuid, c_json json, c_jsonb jsonb,
  c_int4_arr integer[], c_text_arr text[], c_jsonb_arr jsonb[], c_int4_2d integer[][],
  c_int8_arr bigint[], c_float8_arr double precision[], c_numeric_arr numeric[],
  c_timestamptz_arr timestamptz[], c_enum_arr mood[], c_bool_arr boolean[], c_date_arr date[],
  c_bytea_arr bytea[], c_inet inet, c_money money, c_enum mood, c_composite pair,
  c_point point, c_box_arr box[], c_int4range int4range, c_xml xml);

CREATE FUNCTION last_change(col text) RETURNS text LANGUAGE sql AS $$
  SELECT (regexp_match(change::text, '"' || col || '":((?:[^,{}\[\]"]+|"(?:[^"\\]|\\.)*"|\{[^{}]*\}|\[(?:[^\[\]]|\[[^\[\]]*\])*\]))'))[1]
    FROM "zero_0/cdc"."changeLog"
   WHERE change->>'tag' = 'insert'
   ORDER BY watermark COLLATE "C" DESC, pos DESC LIMIT 1
$$;

-- typical values
INSERT INTO all_types VALUES (1,
  1, 2, 9007199254740993, 4000000000,
  1.5, 3.141592653589793, 1.5, true,
  'plain', 'varchar', 'ab', '\x00ff10',
  '2020-02-29', '12:34:56.789', '12:34:56.789+05:30', '2020-02-29 12:34:56.123456', '2020-02-29 12:34:56.123456+00',
  '1 year 2 mons 3 days 04:05:06.789', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"b": 1, "a": [1, 2.50]}', '{"nested": {"t": true}}',
  '{1,2,3}', '{a,"b c",NULL,"NULL"}', ARRAY['{"a":1}', '[1, 2]', 'null', '12345678901234567890']::jsonb[], '{{1,2},{3,4}}',
  '{0,-1,9007199254740993,-9223372036854775808}', '{1.5,NaN,Infinity,-Infinity,-0,1e-300}', '{1.5,NaN,12345678901234567890}',
  '{"2020-02-29 12:34:56.123456+00",infinity,"1969-12-31 23:59:59.999999+00"}', '{sad,happy}', '{t,f,NULL}', '{2020-02-29,infinity}',
  '{"\\x00ff",NULL}', '192.168.1.1/24', 1234.56, 'happy', ROW(1, 'x "y"'),
  '(1.5,-2)', '{(1,1),(0,0);(2,2),(1,1)}', '[1,10)', '<a b="1">text</a>');
SELECT zero_stream.wait_for_catchup();

SELECT col, last_change(col) AS stored, last_change(col) = expected AS ok FROM (VALUES
  ('id', '1'), ('c_int2', '1'), ('c_int4', '2'), ('c_int8', '9007199254740993'), ('c_oid', '4000000000'),
  ('c_float4', '1.5'), ('c_float8', '3.141592653589793'), ('c_numeric', '1.5'), ('c_bool', 'true'),
  ('c_text', '"plain"'), ('c_varchar', '"varchar"'), ('c_char', '"ab   "'),
  ('c_bytea', '{"type":"Buffer","data":[0,255,16]}'),
  ('c_date', '1582934400000'), ('c_time', '45296789'), ('c_timetz', '25496789'),
  ('c_timestamp', '1582979696123.456'), ('c_timestamptz', '1582979696123.456'),
  ('c_interval', '"1 year 2 mons 3 days 04:05:06.789"'), ('c_uuid', '"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"'),
  ('c_json', '"{\"b\": 1, \"a\": [1, 2.50]}"'), ('c_jsonb', '"{\"nested\": {\"t\": true}}"'),
  ('c_int4_arr', '[1,2,3]'), ('c_text_arr', '["a","b c",null,"NULL"]'),
  ('c_jsonb_arr', '[{"a":1},[1,2],null,12345678901234567890]'), ('c_int4_2d', '[[1,2],[3,4]]'),
  ('c_int8_arr', '[0,-1,9007199254740993,-9223372036854775808]'),
  ('c_float8_arr', '[1.5,null,null,null,0,1e-300]'), ('c_numeric_arr', '[1.5,null,1.2345678901234567e+19]'),
  ('c_timestamptz_arr', '[1582979696123.456,null,-0.001]'), ('c_enum_arr', '["sad","happy"]'),
  ('c_bool_arr', '[true,false,null]'), ('c_date_arr', '[1582934400000,null]'),
  ('c_bytea_arr', '[{"type":"Buffer","data":[0,255]},null]'),
  ('c_inet', '"192.168.1.1/24"'), ('c_money', '"$1,234.56"'), ('c_enum', '"happy"'),
  ('c_composite', '"(1,\"x \"\"y\"\"\")"'), ('c_point', '"(1.5,-2)"'),
  ('c_box_arr', '["(1,1),(0,0)","(2,2),(1,1)"]'), ('c_int4range', '"[1,10)"'),
  ('c_xml', '"<a b=\"1\">text</a>"')) AS t(col, expected);

-- extremes, non-finite values and JavaScript number spelling
INSERT INTO all_types (id, c_int2, c_int4, c_int8, c_float4, c_float8, c_numeric, c_date, c_time,
  c_timetz, c_timestamp, c_timestamptz, c_float8_arr, c_numeric_arr)
VALUES (2, -32768, -2147483648, -9223372036854775808, '-Infinity', 1e21, 'NaN', '0044-03-15 BC',
  '24:00:00', '00:00:00+14', '0044-03-15 12:00:00 BC', '-infinity',
  '{1.7976931348623157e308,4.9e-324,0.1,100,1e20,1e21,1e-6,1e-7,0.30000000000000004}',
  '{100,1e20,1e-7,0.000000000000000000000000000001}');
SELECT zero_stream.wait_for_catchup();
SELECT col, last_change(col) AS stored, last_change(col) = expected AS ok FROM (VALUES
  ('c_int2', '-32768'), ('c_int4', '-2147483648'), ('c_int8', '-9223372036854775808'),
  ('c_float4', 'null'), ('c_float8', '1e+21'), ('c_numeric', 'null'),
  ('c_date', '-63517824000000'), ('c_time', '86400000'), ('c_timetz', '36000000'),
  ('c_timestamp', '-63517780800000'), ('c_timestamptz', 'null'),
  ('c_float8_arr', '[1.7976931348623157e+308,5e-324,0.1,100,100000000000000000000,1e+21,0.000001,1e-7,0.30000000000000004]'),
  ('c_numeric_arr', '[100,1e+20,1e-7,1e-30]')) AS t(col, expected);

-- text escaping: quotes, backslash, control characters, unicode, U+2028
INSERT INTO all_types (id, c_text, c_text_arr, c_jsonb)
VALUES (3, E'tab\there\nnl\r\n \x01\x1f\x7f "dq" \\bs \u00e9 \U0001F600 \u2028 </script>',
  ARRAY[E'tab\t', 'quote"', E'back\\slash', '{brace}', 'comma,', ' spaced '],
  E'{"u": "\\u00e9\\ud83d\\ude00", "ctl": "\\t\\n\\u0001", "big": 9007199254740993}');
SELECT zero_stream.wait_for_catchup();
SELECT col, last_change(col) AS stored, last_change(col) = expected AS ok FROM (VALUES
  ('c_text', E'"tab\\there\\nnl\\r\\n \\u0001\\u001f\x7f \\"dq\\" \\\\bs \u00e9 \U0001F600 \u2028 </script>"'),
  ('c_text_arr', '["tab\t","quote\"","back\\slash","{brace}","comma,"," spaced "]'),
  ('c_jsonb', E'"{\\"u\\": \\"\u00e9\U0001F600\\", \\"big\\": 9007199254740993, \\"ctl\\": \\"\\\\t\\\\n\\\\u0001\\"}"')
) AS t(col, expected);

-- NUL cannot be in a text column, but it is in bytea and escaped JSON strings
INSERT INTO all_types (id, c_bytea, c_json) VALUES (4, '\x5c00', '{"nul": "a\u0000b"}');
SELECT zero_stream.wait_for_catchup();
SELECT last_change('c_bytea') AS c_bytea, last_change('c_json') AS c_json;

-- NULL in every column
INSERT INTO all_types (id) VALUES (5);
SELECT zero_stream.wait_for_catchup();
SELECT regexp_replace(change::text, '"relationOid":[0-9]+', '"relationOid":<oid>') AS change
  FROM "zero_0/cdc"."changeLog" WHERE change->>'tag' = 'insert' AND change->'new'->>'id' = '5';
