"""Potato (potato-annotation, its own venv) as the peer of ``bench.bench_browser --against potato``.

What Potato is given: the bench's corpus as a JSON-lines data file (per dialogue an ``id`` and a ``text``:
each turn's "Sys: ..." / "Usr: ..." lines and its gold and predicted states) and a config for one radio
question whose options have their keys ("1" satisfied, "0" not satisfied, Potato's ``key_value``), an open
login (``require_password: false``, ``allow_all_users``: a user is made by entering a name), all in a
project folder of its own, served by ``potato start config.yaml -p PORT --host 127.0.0.1`` (with
``POTATO_GENERATED_TEMPLATES_DIR`` in that folder too, so nothing is written into Potato's venv).

How Potato is driven (its ``static/annotation.js``): a radio option's key selects it on ``keyup``;
``ArrowRight`` on ``keydown`` saves the answer (``POST /updateinstance``), asks for the next item
(``POST /annotate``) and reloads the page (``location.replace``), whose script then shows the item
(``#main-content``, hidden while loading).  So a press spans two documents: the probe keeps its stamps
in ``sessionStorage`` on one clock, ``performance.timeOrigin + performance.now()``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

NEXT_KEY = "ArrowRight"
QUESTION = "Are you satisfied with how the model tracked the user's intent over the whole dialogue?"

# Installed in every page before Potato's scripts; ``window.__bench`` has the DST Judge probe's interface.
PROBE = """(() => {
  if (window.__bench) return;
  const now = () => performance.timeOrigin + performance.now();  // one clock across the page loads of a press
  const save = () => sessionStorage.setItem('__bench', JSON.stringify(S));
  let S = JSON.parse(sessionStorage.getItem('__bench') || '{"armed": false, "from": null, "press": null, "shown": null}');
  const B = window.__bench = {changed: now()};
  Object.defineProperties(B, {press: {get: () => S.press}, shown: {get: () => S.shown}});
  B.token = () => {  // the item shown: its id, once its text is in the DOM and Potato has shown it
    const id = document.getElementById('instance_id'), text = document.getElementById('instance-text');
    const main = document.getElementById('main-content');
    return id && id.value && text && text.textContent.trim() && main && main.style.display !== 'none' ? id.value : null;
  };
  B.arm = () => { S = {armed: true, from: B.token(), press: null, shown: null}; save(); return S.from; };
  window.addEventListener('keydown', () => { if (S.armed && S.press === null) { S.press = now(); save(); } }, true);
  new MutationObserver(() => {
    const t = B.changed = now();
    if (!S.armed || S.press === null || S.shown !== null) return;
    const token = B.token();
    if (token !== null && token !== S.from) { S.shown = t; S.armed = false; save(); }
  }).observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
})()"""

SETTLED = """quiet => document.readyState === 'complete' && window.__bench.token() !== null
  && performance.timeOrigin + performance.now() - window.__bench.changed > quiet"""


def executable(venv: Path) -> Path | None:
    """``potato`` in the venv, when potato-annotation is installed there."""
    potato = venv / "bin" / "potato"
    return potato if potato.is_file() and (venv / "bin" / "python").is_file() else None


def version(venv: Path) -> str | None:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import importlib.metadata as m; print(m.version('potato-annotation'))"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() if done.returncode == 0 else None


def _state(nested: dict) -> str:
    pairs = (f"{domain}-{slot}={value}" for domain, slots in sorted(nested.items()) for slot, value in sorted(slots.items()))
    return ", ".join(pairs)


def items(corpus: Path, dialogues: Path) -> list[dict]:
    """Per dialogue of the corpus (``bench.corpus`` JSON and its ``_dials.json``) a Potato item."""
    states = json.loads(corpus.read_text())
    out = []
    for dialogue in json.loads(dialogues.read_text()):
        turns = states[dialogue["dialogue_idx"]]
        lines = []
        for record in dialogue["dialogue"]:
            turn = turns[str(record["turn_idx"])]
            lines += [
                f"Turn {record['turn_idx']}",
                f"Sys: {record['system_transcript']}",
                f"Usr: {record['transcript']}",
                f"  gold: {_state(turn['gt']) or '(none)'}",
                f"  predicted: {_state(turn['pr']) or '(none)'}",
            ]
        out.append({"id": dialogue["dialogue_idx"], "text": "\n".join(lines)})
    return out


def write_project(folder: Path, corpus: Path, dialogues: Path) -> Path:
    """A Potato project in ``folder`` (made): its data file and ``config.yaml`` (JSON is YAML); returns the folder."""
    folder.mkdir(parents=True)
    with open(folder / "items.jsonl", "w") as data:
        for item in items(corpus, dialogues):
            data.write(json.dumps(item) + "\n")
    config = {
        "annotation_task_name": "DST Judge bench",
        "task_dir": ".",
        "data_files": ["items.jsonl"],
        "item_properties": {"id_key": "id", "text_key": "text"},
        "output_annotation_dir": "annotation_output",
        "require_password": False,
        "user_config": {"allow_all_users": True, "users": []},
        "annotation_schemes": [
            {
                "annotation_type": "radio",
                "name": "satisfaction",
                "description": QUESTION,
                "labels": [{"name": "satisfied", "key_value": "1"}, {"name": "not satisfied", "key_value": "0"}],
            }
        ],
    }
    (folder / "config.yaml").write_text(json.dumps(config, indent=2))
    return folder
