"""Judging: the annotator's loop and the write path of a vote.

- ``loop``: the next item for a person, their answer, skip, go back and undo (``Screen``, ``Judgement``);
- ``votes``: a vote's one write transaction (checks, the place it fills, the event), and votes out and in;
- ``idempotency``: a repeated request (a retry after a timeout) is answered once.

It reads studies and people (``annotate.studies``, ``annotate.people``), never an analysis.
"""
