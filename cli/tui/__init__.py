"""The terminal browser (`agentlog browse`): the fourth front end, on Textual.

It only parses keys, calls the services the other front ends call (`cli.services.search`,
`cli.services.calls`, `cli.services.resume`, `projections.sessions`) and draws their
answers; it imports no other front end.
"""
