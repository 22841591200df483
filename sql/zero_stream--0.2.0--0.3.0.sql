-- zero_stream 0.2.0 -> 0.3.0 update script
\echo Use "ALTER EXTENSION zero_stream UPDATE TO '0.3.0'" to load this file. \quit

-- Nothing the decoder writes changes: the change log, the slot and every
-- subscriber's position are left as they are, and a 0.3.0 library streams
-- before and after this script.

-- subscribers() says why each retained position is retained
ALTER EXTENSION zero_stream DROP FUNCTION subscribers();
DROP FUNCTION subscribers();

CREATE FUNCTION subscribers(
    OUT id text,
    OUT address text,
    OUT mode text,
    OUT protocol integer,
    OUT state text,
    OUT watermark_sent text,
    OUT watermark_acked text,
    OUT messages_sent bigint,
    OUT messages_acked bigint,
    OUT backlog_bytes bigint,
    OUT connected_since timestamptz,
    OUT disconnected_at timestamptz,
    OUT retained_until timestamptz,
    OUT retained_because text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'zs_subscribers'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION subscribers() IS
  'Connections of the zero_stream subscriber server (position sent and acknowledged, backlog, state), then the positions retained for subscribers that left (state departed, or restored after a restart) until retained_until, and why (retained_because: disconnected, restarted, standby, reservation)';

REVOKE ALL ON FUNCTION subscribers() FROM PUBLIC;
