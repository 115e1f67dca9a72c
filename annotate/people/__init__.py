"""People: who someone is and what they may do.

- ``auth``: accounts, passwords (bcrypt), roles and the permission checks;
- ``sessions``: signed browser sessions (login, device tokens, log-out everywhere);
- ``tokens``: the API's bearer tokens;
- ``proxy``: identity from a trusted reverse proxy's header.

Nothing here imports a study, a vote or an analysis.
"""
