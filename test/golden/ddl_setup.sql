-- Schema for ddl_workload.sql (see DDL.md): the tables its DDL cases touch.
-- public is published (zc_pub, via the partition root); schema other is not.
-- capture_zero_cache.sh adds its marker table public.zc_marker after this file.
CREATE TABLE public.t (id int PRIMARY KEY, v text);
INSERT INTO public.t VALUES (1, 'one'), (2, 'two'), (3, 'three');

CREATE TABLE public.u (id int PRIMARY KEY, a int UNIQUE NOT NULL, v text);
INSERT INTO public.u VALUES (1, 10, 'u1'), (2, 20, 'u2');

CREATE TABLE public.parted (id int, k int, v text, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);
CREATE TABLE public.parted_1 PARTITION OF public.parted FOR VALUES FROM (0) TO (100);
INSERT INTO public.parted VALUES (1, 1, 'p1'), (2, 50, 'p2'), (3, 99, 'p3');

CREATE TABLE public.g (id int PRIMARY KEY, v text);
INSERT INTO public.g VALUES (1, 'g1'), (2, 'g2'), (3, 'g3');

CREATE SCHEMA other;
CREATE TABLE other.x (id int PRIMARY KEY);
CREATE INDEX other_x_idx ON other.x (id);
INSERT INTO other.x VALUES (1), (2);

CREATE PUBLICATION zc_pub FOR TABLES IN SCHEMA public WITH (publish_via_partition_root = true);
