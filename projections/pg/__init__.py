"""The team engine: each machine's log shipped to PostgreSQL, projected and searched there.

The local LMDB log stays each machine's durable truth; PostgreSQL holds byte-exact copies of
every host's records (`sync`), re-checks their chains (`verify`), projects them into a
`documents` table with the same parsers as history.db (`project`) and answers the same
query contract with a `host` field (`query`). Roles and row-level security (`roles`) keep a
machine's writer to its own host's rows. psycopg 3, plain SQL, no ORM; imported only by
the commands that use a server.
"""
