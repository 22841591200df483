# Sourced by the benchmarks: the table they write and the procedure that
# writes it, N rows in transactions of per_tx rows each.
ROWS_TABLE_SQL="CREATE TABLE rows (id bigint PRIMARY KEY, n int, label text, at timestamptz, amount numeric)"
BULK_PROCEDURE_SQL="
CREATE PROCEDURE bulk(total int, per_tx int) LANGUAGE plpgsql AS \$\$
DECLARE base bigint := coalesce((SELECT max(id) FROM rows), 0);
BEGIN
  FOR t IN 0 .. total / per_tx - 1 LOOP
    INSERT INTO rows SELECT base + t * per_tx + g, g, 'label ' || g, now(), g * 1.25
      FROM generate_series(1, per_tx) g;
    COMMIT;
  END LOOP;
END \$\$"
