-- Nothing, but running a statement is when PostgreSQL acts on a pending cancel or
-- statement_timeout, which a long loop of Python inside the server never sees (budget.Ticker,
-- extraction.py resolve_repository_edges).
select
