"""`PARSER_VERSION`: changes whenever the records a given input yields change (any parser of
`readers/`); history.db records it, and projections rebuild when it differs. A module of its
own, with no imports, so the search path can compare it without loading the parsers."""

PARSER_VERSION = 1
