-- The PostgreSQL side of config/tools.yaml's record_refund tool (jdbc connector): a role, a
-- database and the table its statement writes. Run once, as a superuser:
--
--   psql -h 127.0.0.1 -U postgres -v password='<a password of yours>' -f config/postgres.sql
--
-- then give the executor's user the password in ~/.pgpass (or the file PGPASSFILE names), one
-- line, mode 0600:
--
--   127.0.0.1:5432:payments:ledger:<the same password>
--
-- tools.yaml names no password: it is published to the tool-policy topic, which is no place for
-- a secret, and the PostgreSQL JDBC driver reads ~/.pgpass when the url and settings give none.
-- The connector creates its dedup table (effect_ledger_dedup) itself, which the role may do in a
-- database it owns.

CREATE ROLE ledger LOGIN PASSWORD :'password';
CREATE DATABASE payments OWNER ledger;

\connect payments

CREATE TABLE refunds (
  id bigserial PRIMARY KEY,
  customer text NOT NULL,
  amount bigint NOT NULL CHECK (amount > 0),
  created_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE refunds OWNER TO ledger;
