"""The one door to the store: every action of the pages, of both CLIs (``python -m annotate``,
``python -m exports``), of the HTTP API and of scripts, with the permission check on the server side of
every action.

Each function takes the actor: an annotator (``user``) as the login established it, or the command
line's actor (:data:`CLI`: an admin, recorded as ``cli`` in a study's change log).  Admin actions refuse
non-admins; an annotator can only see items they were given and only read or change their own votes.
The pages call nothing else that reads or writes the store (but the outage probe,
``store.db.reachable``, one ``SELECT 1``); what pages import besides is constants and pure functions (a
kind's item view, a report's prose, the proxy rules).

Callers import this package (``from annotate import service``; ``service.answer(...)``), never a wing:
the wings are how the door is built, one reason to change each (issue 39):

- :mod:`~annotate.service.judging`: the annotator's loop, one read or one write per screen
  (``annotate.judging.loop``); the vote's :class:`~annotate.judging.loop.Judgement`.
- :mod:`~annotate.service.people`: logins, the demo, accounts, API tokens, the command line's actor.
- :mod:`~annotate.service.crowd`: crowd workers' join links and finishes; the admin's crowd settings.
- :mod:`~annotate.service.studies`: a study's life for its admin: creation, settings, members, gold,
  allocation and design, archive and delete.
- :mod:`~annotate.service.analysis`: what the Analysis and Progress pages read: the cached analysis,
  progress, exclusions, annotator quality, adjudication, automatic judges.
- :mod:`~annotate.service.downloads`: votes out and in, exports, and the record of what was exported.
- :mod:`~annotate.service.api`: the HTTP API's data shapes and its loop (``annotate.api`` calls these
  and the functions above).

The analysis stack (numpy, pandas, the statistics) is imported by the functions that run it, never at
import: the login page and the annotator's loop stay light (issue 36, ``tests/unit/test_startup_imports``).
"""

from __future__ import annotations

from annotate.judging.idempotency import KeyReused
from annotate.judging.loop import NotLoggedIn
from annotate.judging.votes import CapacityError, Reassigned
from annotate.people.auth import AuthError, PermissionDenied, StudyClosed, require_admin
from annotate.service.analysis import (
    adjudicate,
    allocation_status,
    analysis_exclusions,
    analysis_look,
    annotator_quality,
    exclude_annotator,
    include_annotator,
    item_votes,
    judge_study,
    start_background_analysis,
    study_analysis,
    study_conditions,
    study_progress,
)
from annotate.service.api import (
    ApiItem,
    ApiNext,
    ApiProgress,
    ApiQuestion,
    ApiVote,
    api_export,
    api_next,
    api_progress,
    api_study,
    api_vote,
)
from annotate.service.crowd import (
    crowd_joins,
    crowd_link,
    crowd_settings,
    crowd_status,
    join_crowd,
    join_crowd_browser,
    set_crowd,
)
from annotate.service.downloads import (
    ExportFiles,
    export,
    export_files,
    import_votes,
    import_votes_upload,
    record_export,
    vote_table,
    votes_csv,
    votes_download,
)
from annotate.service.judging import (
    answer,
    answers_since,
    claim_screen,
    history,
    item_audio,
    item_for,
    judge,
    last_study,
    my_answers,
    my_comment,
    my_history,
    my_progress,
    next_item,
    release_places,
    screen,
    skip,
    skip_to_next,
    submit,
)
from annotate.service.people import (
    CLI,
    Actor,
    AnnotatorSummary,
    add_person,
    add_token,
    ensure_demo,
    list_annotators,
    list_tokens,
    log_in,
    log_out,
    open_engine,
    reset_password,
    revoke_tokens,
    session_user,
    token_user,
)
from annotate.service.studies import (
    ItemSummary,
    StudySummary,
    allocation_settings,
    change_members,
    create_study_from_files,
    create_study_from_uploads,
    delete_study,
    design_proposal,
    find_study,
    freeze_plan,
    list_studies,
    plan_file,
    reopen,
    set_allocation,
    set_archived,
    set_designed_k,
    set_gold,
    set_guideline,
    set_members,
    set_overlap,
    set_study_settings,
    study_changes,
    study_items,
    study_members,
    study_plan,
    study_settings,
)
from annotate.studies import StudyError, question_spec

__all__ = [
    # what the service's callers catch (the pages, the CLIs, the API's problem mapping)
    "AuthError",
    "CapacityError",
    "KeyReused",
    "NotLoggedIn",
    "PermissionDenied",
    "Reassigned",
    "StudyClosed",
    "StudyError",
    # rules the pages apply before they ask (the same ones the service checks)
    "question_spec",
    "require_admin",
    # judging: the annotator's loop
    "answer",
    "answers_since",
    "claim_screen",
    "history",
    "item_audio",
    "item_for",
    "judge",
    "last_study",
    "my_answers",
    "my_comment",
    "my_history",
    "my_progress",
    "next_item",
    "release_places",
    "screen",
    "skip",
    "skip_to_next",
    "submit",
    # people: logins, the demo, accounts, tokens
    "CLI",
    "Actor",
    "AnnotatorSummary",
    "add_person",
    "add_token",
    "ensure_demo",
    "list_annotators",
    "list_tokens",
    "log_in",
    "log_out",
    "open_engine",
    "reset_password",
    "revoke_tokens",
    "session_user",
    "token_user",
    # crowd workers
    "crowd_joins",
    "crowd_link",
    "crowd_settings",
    "crowd_status",
    "join_crowd",
    "join_crowd_browser",
    "set_crowd",
    # studies
    "ItemSummary",
    "StudySummary",
    "allocation_settings",
    "change_members",
    "create_study_from_files",
    "create_study_from_uploads",
    "delete_study",
    "design_proposal",
    "find_study",
    "freeze_plan",
    "list_studies",
    "plan_file",
    "reopen",
    "set_allocation",
    "set_archived",
    "set_designed_k",
    "set_gold",
    "set_guideline",
    "set_members",
    "set_overlap",
    "set_study_settings",
    "study_changes",
    "study_items",
    "study_members",
    "study_plan",
    "study_settings",
    # analysis
    "adjudicate",
    "allocation_status",
    "analysis_exclusions",
    "analysis_look",
    "annotator_quality",
    "exclude_annotator",
    "include_annotator",
    "item_votes",
    "judge_study",
    "start_background_analysis",
    "study_analysis",
    "study_conditions",
    "study_progress",
    # downloads
    "ExportFiles",
    "export",
    "export_files",
    "import_votes",
    "import_votes_upload",
    "record_export",
    "vote_table",
    "votes_csv",
    "votes_download",
    # the HTTP API
    "ApiItem",
    "ApiNext",
    "ApiProgress",
    "ApiQuestion",
    "ApiVote",
    "api_export",
    "api_next",
    "api_progress",
    "api_study",
    "api_vote",
]
