"""The SQLSTATE codes codesift raises, by their PostgreSQL names (Appendix A of the
PostgreSQL manual), so a reader sees what an error means and a client can match on it."""

DATA_EXCEPTION = "22000"
NULL_VALUE_NOT_ALLOWED = "22004"
INVALID_PARAMETER_VALUE = "22023"
INSUFFICIENT_PRIVILEGE = "42501"
UNDEFINED_OBJECT = "42704"
