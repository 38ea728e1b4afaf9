// What PostgreSQL says outside a query's result goes to newsdesk's log, not raw to stderr: the
// NOTICEs and WARNINGs of statements ("relation ... already exists, skipping"), and the FATAL a
// server sends before it cuts a connection ("terminating connection due to administrator
// command", which the listening connection receives while it waits).
#pragma once

// libpq's connection (PGconn); the caller includes <libpq-fe.h>.
struct pg_conn;

namespace newsdesk::server {

// From now on `conn`'s notices are logged, one logfmt line each:
//   level=warn msg="postgres notice" connection=listener severity=FATAL text="..."
// WARNING and worse (ERROR, FATAL, PANIC, or a severity newsdesk does not know) at warn, NOTICE,
// INFO and LOG at info, DEBUG at debug. `connection` names the connection in the line; it must
// outlive `conn` (a string literal). Call once, right after connecting; PQreset keeps it.
// Threads: the notices are logged on whichever thread is using `conn` when they arrive.
void log_notices(pg_conn* conn, const char* connection);

} // namespace newsdesk::server
