"""The settings of `codesift mcp` and what it tells a client about itself (its name, its
instructions to agents), shared by mcp_start (which answers a stdio client's `initialize`
before the MCP SDK is imported) and mcp_server (the SDK's server). Nothing here imports the
SDK or touches the database: mcp_start imports this module before answering `initialize`.
"""

from dataclasses import dataclass

NAME = "codesift"
INSTRUCTIONS = (
    "codesift answers questions about indexed code from PostgreSQL. Prefer search_code "
    "over grep for 'where/how is X done' questions; find_symbol when you know a name; "
    "related_files before changing a file (who imports it, which tests cover it); "
    "find_references and callers before changing a definition; outline and repo_map "
    "instead of reading whole files or listing folders."
)


@dataclass
class Settings:
    dsn: str
    read_dsn: str | None = None  # a hot standby for the query tools (tokens: dsn)
    http: bool = False
    tenant_id: int | None = None  # stdio: the one tenant (looked up on the first call)
    tenant_name: str | None = None
    host: str = "127.0.0.1"
    port: int = 8765
    pool_min: int = 2
    pool_max: int = 10
    repo_path: str | None = None  # stdio: what sync_index re-indexes by default
    repo_name: str | None = None  # stdio: the name sync_index indexes repo_path under
    # --http: a client sends a whole request (head and body) within read_timeout seconds
    # of starting it; at most max_connections are open at once (fewer if the descriptor
    # limit leaves less room)
    read_timeout: float = 30.0
    max_connections: int = 1000
    # --http: MCP sessions open at once, in all, per tenant and per token; past a cap the
    # least recently used session (of that token, that tenant, the largest tenant) ends
    max_sessions: int = 10_000
    sessions_per_tenant: int = 1000
    sessions_per_token: int = 100
    # --http: Prometheus metrics on a port of their own (None: not served), the request
    # log with each call's arguments (a question's text) too, and the seconds a SIGTERM
    # leaves the requests running to finish (mcp_observability, observability)
    metrics_host: str = "127.0.0.1"
    metrics_port: int | None = None
    log_queries: bool = False
    shutdown_grace: float = 30.0
    # --http: JWTs of this OpenID Connect issuer for this audience are accepted too, their
    # tenant named by the claim oidc_tenant_claim (oidc.py)
    oidc_issuer: str | None = None
    oidc_audience: str | None = None
    oidc_tenant_claim: str = "codesift_tenant"
