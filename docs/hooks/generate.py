"""MkDocs hook: the parts of the docs that are made from the code and the benches at build time.

A page asks for a generated part with a comment on a line of its own::

    <!-- generate: cli annotate -->        every command of dst-judge (python -m annotate), from its parser
    <!-- generate: cli metrics -->         python -m metrics
    <!-- generate: cli exports -->         python -m exports
    <!-- generate: openapi -->             the HTTP API's endpoints, from the FastAPI app's OpenAPI document
    <!-- generate: settings -->            the DST_JUDGE_* settings (formats.settings.describe_settings)
    <!-- generate: export-formats -->      the export formats (exports.formats.FORMATS)
    <!-- generate: bench NAME -->          docs/benchmarks/NAME.json as tables
    <!-- generate: bench-rest -->          every docs/benchmarks/*.json no "bench" comment of the site names
    <!-- generate: coverage EST,EST... --> coverage tables of docs/benchmarks/coverage.json for those estimates
    <!-- generate: systems -->             the system-level simulation, docs/benchmarks/systems.json
    <!-- generate: designer -->            the λ designer's predictions vs measurements, docs/benchmarks/designer-lambda.json
    <!-- generate: include PATH -->        a file of the repository (its first heading left out)

Nothing here is typed by hand: a changed parser, route, setting or bench run changes the page at the
next ``mkdocs build``.  The OpenAPI document itself is written into the site as
``reference/openapi.json``.  A generator that fails stops the build (no page shows a half-made table).
"""

from __future__ import annotations

import argparse
import html
import json
import posixpath
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH_DIR = REPO / "docs" / "benchmarks"
COMMENT = re.compile(r"^<!--\s*generate:\s*([\w-]+)\s*(.*?)\s*-->\s*$", re.M)
WIDTH = 100  # argparse usage lines wrap here, whatever the terminal

# How each bench is run, for a JSON that does not say (files recorded by docs/hooks/record_bench.py do).
BENCH_COMMANDS = {
    "install": "python -m bench.bench_install --json",
    "startup": "python -m bench.bench_startup --json",
}

_openapi_cache: dict | None = None
_page_dir = ""  # the folder of the page being made, for links relative to it


# --------------------------------------------------------------------------- MkDocs events


def on_files(files, config):
    """The OpenAPI document as a file of the site (so that pages may link to it)."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, "reference/openapi.json", content=json.dumps(openapi(), indent=1)))
    return files


def on_page_markdown(markdown, page, config, files):
    global _page_dir
    _page_dir = posixpath.dirname(page.file.src_uri)
    return COMMENT.sub(lambda found: GENERATORS[found.group(1)](found.group(2)), markdown)


# --------------------------------------------------------------------------- helpers


def cell(text) -> str:
    """A Markdown table cell: no line breaks, pipes escaped, angle brackets as text outside code spans
    (inside them Markdown shows them as they are)."""
    parts = " ".join(str(text).split()).split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: no code span
        parts = ["'".join(parts)]
    parts = [part if i % 2 else html.escape(part, quote=False) for i, part in enumerate(parts)]
    return "`".join(parts).replace("|", "\\|")


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def number(value) -> str:
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:  # NaN
            return "NaN"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    if isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
        return ", ".join(number(v) for v in value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


# --------------------------------------------------------------------------- CLI reference


def _parser(name: str) -> argparse.ArgumentParser:
    if name == "annotate":
        from annotate.__main__ import build_parser

        return build_parser()
    if name == "metrics":
        from metrics.__main__ import build_parser

        return build_parser()
    if name == "exports":
        from annotate.export_cli import build_parser

        return build_parser()
    raise ValueError(f"no parser named {name!r}")


def _help(action: argparse.Action, prog: str) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    return argparse.HelpFormatter(prog)._expand_help(action)


def _argument(action: argparse.Action) -> str:
    if not action.option_strings:
        return action.metavar or action.dest
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    metavar = action.metavar or (action.dest.upper() if not action.choices else "{" + ",".join(map(str, action.choices)) + "}")
    if isinstance(metavar, tuple):
        metavar = " ".join(metavar)
    if action.nargs in ("+", "*"):
        metavar += " ..."
    return ", ".join(f"{option} {metavar}" for option in action.option_strings)


def _default(action: argparse.Action) -> str:
    default = action.default
    if action.nargs == 0 or default is None or default is argparse.SUPPRESS or default in ([], ""):
        return ""
    return f"`{default}`"


def _commands(parser: argparse.ArgumentParser, path: list[str], description: str):
    """Every runnable command: (words after the program, parser, one-line description)."""
    subactions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subactions:
        yield path, parser, description
        return
    helps = {choice.dest: choice.help or "" for choice in subactions[0]._choices_actions}
    for word, sub in subactions[0].choices.items():
        yield from _commands(sub, [*path, word], helps.get(word, ""))


def cli(name: str) -> str:
    top = _parser(name.strip())
    prog = top.prog
    out = []
    globals_ = [a for a in top._actions if a.option_strings and a.help != argparse.SUPPRESS and a.dest != "help"]
    has_commands = any(isinstance(a, argparse._SubParsersAction) for a in top._actions)
    if globals_ and has_commands:
        out.append(f"Options of `{prog}` itself, given before the command:\n")
        out.append(
            table(["option", "meaning", "default"], [[f"`{_argument(a)}`", _help(a, prog), _default(a)] for a in globals_])
        )
        out.append("")
    for path, parser, description in _commands(top, [], top.description or ""):
        parser.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=WIDTH)
        title = " ".join([prog, *path])
        if path:  # the command itself has its heading on the page
            out.append(f"### `{title}`\n")
        if description and path:
            out.append(description.replace("%%", "%") + "\n")
        usage = parser.format_usage().strip()
        out.append("```text\n" + usage + "\n```\n")
        rows = []
        for action in parser._actions:
            if action.dest == "help" or action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
                continue
            meaning = _help(action, parser.prog)
            if action.choices and action.metavar and action.nargs != 0:  # the braces do not show them
                meaning = (meaning + "; " if meaning else "") + "one of " + ", ".join(map(str, action.choices))
            rows.append([f"`{_argument(action)}`", meaning, _default(action)])
        if rows:
            out.append(table(["argument", "meaning", "default"], rows) + "\n")
    return "\n".join(out)


# --------------------------------------------------------------------------- HTTP API


def openapi() -> dict:
    global _openapi_cache
    if _openapi_cache is None:
        from annotate.api.app import create_app

        _openapi_cache = create_app().openapi()  # builds the document only; no database is opened
    return _openapi_cache


def api(_: str) -> str:
    spec = openapi()
    out = [
        f"{spec['info']['title']}, version {spec['info']['version']} (OpenAPI {spec['openapi']}); "
        "the whole document: [openapi.json](openapi.json).\n",
        table(
            ["method", "path", "what it does"],
            [
                [method.upper(), f"`{path}`", operation.get("summary", "")]
                for path, item in spec["paths"].items()
                for method, operation in item.items()
            ],
        ),
        "",
    ]
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            out.append(f"### {method.upper()} `{path}`\n")
            if operation.get("description"):
                out.append(operation["description"].strip().replace("``", "`") + "\n")
            parameters = operation.get("parameters", [])
            if parameters:
                rows = [
                    [
                        f"`{p['name']}`",
                        p["in"],
                        "yes" if p.get("required") else "no",
                        _type(p.get("schema", {})),
                        p.get("description", ""),
                    ]
                    for p in parameters
                ]
                out.append(table(["parameter", "in", "required", "type", "meaning"], rows) + "\n")
            body = operation.get("requestBody", {}).get("content", {})
            for media, content in body.items():
                out.append(f"Request body: `{media}`, {_type(content.get('schema', {}))}.\n")
            responses = [
                [code, response.get("description", ""), ", ".join(_media(m, c) for m, c in response.get("content", {}).items())]
                for code, response in operation.get("responses", {}).items()
            ]
            if responses:
                out.append(table(["status", "meaning", "content"], responses) + "\n")
    schemas = spec.get("components", {}).get("schemas", {})
    if schemas:
        out.append("## Schemas\n")
    for name, schema in schemas.items():
        out.append(f"### {name}\n")
        if schema.get("description"):
            out.append(schema["description"].strip() + "\n")
        required = set(schema.get("required", []))
        rows = [
            [f"`{field}`", _type(spec_), "yes" if field in required else "no", spec_.get("description", "")]
            for field, spec_ in schema.get("properties", {}).items()
        ]
        if rows:
            out.append(table(["field", "type", "required", "meaning"], rows) + "\n")
    return "\n".join(out)


def _media(media: str, content: dict) -> str:
    schema = content.get("schema")
    return f"{media} ({_type(schema)})" if schema and media == "application/json" else media


def _type(schema: dict) -> str:
    """A JSON schema's type in a few words: ``string``, ``list of Item``, ``Item or null``, ``map of string``."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " or ".join(_type(s) for s in schema["anyOf"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"map of {_type(schema['additionalProperties'])}"
    return kind


# --------------------------------------------------------------------------- settings, export formats


def settings(_: str) -> str:
    from formats.settings import describe_settings

    rows = [[f"`{row.env}`", row.type, row.default, row.doc] for row in describe_settings()]
    return table(["variable", "type", "default", "meaning"], rows)


def export_formats(_: str) -> str:
    from exports.formats import FORMATS

    rows = [[f"`{f.name}`", f"`{f.file_name}`", ", ".join(f.kinds), f.description] for f in FORMATS.values()]
    return table(["format", "file", "kinds", "what it writes"], rows)


# --------------------------------------------------------------------------- benchmarks


def _bench_file(name: str) -> Path:
    return BENCH_DIR / f"{name}.json"


def _meta(name: str, data: dict) -> str:
    command = data.get("command") or BENCH_COMMANDS.get(name) or f"python -m bench.bench_{name} --json"
    parts = [f"Made by `{command}`"]
    if data.get("recorded"):
        parts.append(f"on {data['recorded']}")
    machine = data.get("machine") or {}
    if machine.get("cpus"):
        text = f"on {machine['cpus']} CPUs"
        loads = [machine.get("load_average_before"), machine.get("load_average_after")]
        if all(v is not None for v in loads):
            text += f" (load average {loads[0]} before, {loads[1]} after: the machine was shared)"
        parts.append(text)
    if data.get("wall_s") is not None:
        parts.append(f"in {number(data['wall_s'])} s")
    link = posixpath.relpath(f"benchmarks/{name}.json", _page_dir or ".")
    return " ".join(parts) + f". Raw figures: [{name}.json]({link})."


def _scalar(value) -> bool:
    return not isinstance(value, (dict, list)) or (
        isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value)
    )


def _render(value, title: str, depth: int) -> list[str]:
    """A JSON value as tables: scalars as key/value rows, dicts of scalars side by side, lists of
    objects as one row each, deeper objects under a bold label of their path."""
    out: list[str] = []
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            columns: list[str] = []
            for row in value:
                columns += [k for k in row if k not in columns]
            out.append(table(columns, [[number(row.get(c)) for c in columns] for row in value]))
        else:
            out.append(number(value))
        return out
    if not isinstance(value, dict):
        return [number(value)]
    scalars = [(k, v) for k, v in value.items() if _scalar(v)]
    if scalars:
        out.append(table(["figure", "value"], [[k, number(v)] for k, v in scalars]))
        out.append("")
    flat = {k: v for k, v in value.items() if isinstance(v, dict) and v and all(_scalar(x) for x in v.values())}
    if len(flat) >= 2:  # sibling objects of scalars: one table, a row each
        columns = []
        for inner in flat.values():
            columns += [k for k in inner if k not in columns]
        rows = [[k, *[number(inner.get(c)) for c in columns]] for k, inner in flat.items()]
        if len(columns) > 8 and len(columns) > len(flat):  # wide: turn it round
            rows = [[c, *[number(inner.get(c)) for inner in flat.values()]] for c in columns]
            columns, first = list(flat), ""
        else:
            first = ""
        out.append(table([first, *columns], rows))
        out.append("")
    for key, inner in value.items():
        if _scalar(inner) or (len(flat) >= 2 and key in flat):
            continue
        out.append(f"**{title}{key}**\n")  # a label, not a heading: the page's contents stay the benches
        out += _render(inner, f"{title}{key} › ", depth + 1)
        out.append("")
    return out


def bench(name: str) -> str:
    name = name.strip()
    path = _bench_file(name)
    if not path.exists():
        command = BENCH_COMMANDS.get(name, f"python -m bench.bench_{name} --json")
        return (
            f"No recorded run in `docs/benchmarks/{name}.json` yet. To record one: "
            f"`python docs/hooks/record_bench.py {name} -- {command}`."
        )
    data = json.loads(path.read_text(encoding="utf-8"))
    out = [_meta(name, data), ""]
    if "output" in data:
        out.append("```text\n" + data["output"].rstrip() + "\n```")
    else:
        result = data["result"] if "result" in data and "bench" in data else data
        out += _render({k: v for k, v in result.items() if k not in ("command",)}, "", 4)
    return "\n".join(out)


def bench_rest(_: str) -> str:
    """Every recorded run that no page of the site asks for by name (a new bench's JSON shows up here)."""
    named = {"coverage", "systems", "designer-lambda"}
    for page in (REPO / "docs").rglob("*.md"):
        for found in COMMENT.finditer(page.read_text(encoding="utf-8")):
            if found.group(1) == "bench":
                named.add(found.group(2).strip())
    rest = sorted(p.stem for p in BENCH_DIR.glob("*.json") if p.stem not in named)
    if not rest:
        return "No other recorded runs."
    return "\n\n".join(f"### {name}\n\n{bench(name)}" for name in rest)


def coverage(estimates: str) -> str:
    path = _bench_file("coverage")
    wanted = [e.strip() for e in estimates.split(",") if e.strip()]
    if not path.exists():
        return (
            "No recorded coverage run in `docs/benchmarks/coverage.json`. To record one: "
            "`python docs/hooks/record_bench.py coverage -- python -m bench.bench_coverage --json`."
        )
    data = json.loads(path.read_text(encoding="utf-8"))
    result = data.get("result", data)
    # A part re-run later (record_bench.py --merge) names its own run under its tables
    made_by = {e: part for part in data.get("parts", []) for e in part.get("estimates", [])}
    rows = [r for r in result["rows"] if r["estimate"] in wanted]
    sizes = sorted({r["n"] for r in rows})
    designs: list[str] = []
    for r in rows:
        if r["design"] not in designs:
            designs.append(r["design"])
    replicates = sorted({r["replicates"] for r in rows})
    out = [
        f"Coverage of the true value by each interval family (nominal 0.95), at {' / '.join(map(str, sizes))} "
        f"{rows[0]['unit'] if rows else 'units'} per study; {', '.join(map(str, replicates))} simulated studies per "
        f"cell, so a coverage of 0.95 is measured to ±{(0.95 * 0.05 / min(replicates)) ** 0.5:.3f} (one Monte-Carlo "
        f"standard error; each row's own is in the raw figures); **bold**: the family the tool reports. "
        f"{_meta('coverage', data)}" + (" A table re-run later says so under it." if any(e in made_by for e in wanted) else ""),
        "",
    ]
    for estimate in wanted:
        mine = [r for r in rows if r["estimate"] == estimate]
        if not mine:
            continue
        mine_designs = [d for d in designs if any(r["design"] == d for r in mine)]
        families: list[tuple[str, bool]] = []
        for r in mine:
            if (r["family"], r["default"]) not in families:
                families.append((r["family"], r["default"]))
        cells = {(r["family"], r["design"], r["n"]): r["coverage"] for r in mine}
        body = []
        for family, default in families:
            name = f"**{family}**" if default else family
            body.append(
                [name]
                + [
                    "\u00a0".join(f"{cells[(family, d, n)]:.3f}".lstrip("0") if (family, d, n) in cells else "—" for n in sizes)
                    for d in mine_designs
                ]
            )
        out.append(f"`{estimate}` (each cell: n = {' / '.join(map(str, sizes))})\n")
        out.append(table(["family", *mine_designs], body))
        if estimate in made_by:
            part = made_by[estimate]
            replicates_part = sorted({r["replicates"] for r in mine})
            out.append(
                f"\nThis table, re-run on its own ({', '.join(map(str, replicates_part))} simulated studies per cell, "
                f"so 0.95 is measured to ±{(0.95 * 0.05 / min(replicates_part)) ** 0.5:.3f}): {_meta('coverage', part)}"
            )
        out.append("")
    return "\n".join(out)


# --------------------------------------------------------------------------- files


def systems(_: str) -> str:
    """The system-level simulation (``bench/bench_systems.py``) as one table: per number of systems and
    dialogues, metric a's four intervals (coverage, mean width) and the paired tests' coverage and
    rejection rate."""
    path = _bench_file("systems")
    if not path.exists():
        return (
            "No recorded run in `docs/benchmarks/systems.json` yet. To record one: "
            "`python docs/hooks/record_bench.py systems -- python -m bench.bench_systems --json`."
        )
    data = json.loads(path.read_text(encoding="utf-8"))
    result = data.get("result", data)
    truth = result["truth"]
    statistics = ("pearson", "spearman", "kendall", "accuracy")
    body = []
    for row in result["rows"]:
        cells = [str(row["systems"]), str(row["dialogues"])]
        for name in statistics:
            cell = row[name]
            cells.append("—" if cell["rate"] is None else f"{cell['rate']:.3f} ± {cell['mc_se']:.3f} ({cell['width']:.2f})")
        for pair in ("b-c", "a-c"):
            test = row[pair]
            cells.append(
                "—" if test["coverage"]["rate"] is None else f"{test['coverage']['rate']:.3f} ({test['rejects']['rate']:.3f})"
            )
        body.append(cells)
    replicates = sorted({r["replicates"] for r in result["rows"]})
    head = (
        f"Coverage ± one Monte-Carlo SE (mean width) of the 95% intervals of metric a (JGA) against the population "
        f"truth (Pearson {truth['a']['pearson']:.3f}, Spearman {truth['a']['spearman']:.3f}, Kendall "
        f"{truth['a']['kendall']:.3f}, pairwise accuracy {truth['a']['accuracy']:.3f}); for the paired tests, the "
        f"coverage of the true difference on Pearson (b − c {truth['b-c']['pearson']:.3f}, a − c "
        f"{truth['a-c']['pearson']:.3f}) and, in brackets, the share of studies with p < 0.05 (for b − c, the test's "
        f"size; for a − c, its power). {', '.join(map(str, replicates))} simulated studies per row, "
        f"{result['resamples']} draws each. {_meta('systems', data)}"
    )
    header = ["systems", "dialogues", "Pearson r", "Spearman ρ", "Kendall τ-b", "pairwise accuracy", "b − c", "a − c"]
    return head + "\n\n" + table(header, body)


def designer(_: str) -> str:
    """The λ designer's predictions against the interval the Analysis page reports (``bench_adaptive --seeds
    --questions lambda``, docs/benchmarks/designer-lambda.json): per seed and rating scale, the predicted and
    measured mean widths at the whole budget, the savings the designer promises and the one measured, with
    Monte-Carlo SEs; then the widths at every share of the budget."""
    path = _bench_file("designer-lambda")
    command = "python -m bench.bench_adaptive --seeds 3 --replicates 150 --resamples 1000 --questions lambda --json"
    if not path.exists():
        return (
            "No recorded run in `docs/benchmarks/designer-lambda.json` yet. To record one: "
            f"`python docs/hooks/record_bench.py designer-lambda -- {command}`."
        )
    data = json.loads(path.read_text(encoding="utf-8"))
    result = data.get("result", data)
    names = {"binary": "binary", "five": "1-5"}
    nan = float("nan")

    def pm(value, se, digits: int = 3) -> str:
        return "—" if value is None else f"{value:.{digits}f}" + ("" if se is None else f" ± {se:.{digits}f}")

    body, widths = [], []
    for scale in result["scales"]:
        for seed in result["per_seed"]:
            block = seed[scale]["lambda"]
            mine, reference = block["designer"] or {}, block["reference"]
            whole = block["designer_by_budget"].get("1", {})
            body.append(
                [
                    names[scale],
                    str(seed["seed"]),
                    f"{seed[scale]['icc']:.2f}",
                    f"{whole.get('n', '—')} + {whole.get('m', '—')}",
                    pm(whole.get("predicted_width"), whole.get("predicted_width_se")),
                    pm(mine.get("ci_width"), mine.get("ci_width_se")),
                    pm(block.get("predicted_reference_width"), None),
                    pm(reference["ci_width"], reference.get("ci_width_se")),
                    pm(block.get("predicted_saving"), None, 2),
                    pm(block.get("predicted_saving_by_budget"), None, 2),
                    pm(block.get("saving"), block.get("saving_se"), 2),
                    pm(mine.get("coverage"), mine.get("coverage_se")),
                ]
            )
            for share, cell in block["designer_by_budget"].items():
                ratio = cell["ci_width"] / cell["predicted_width"] if cell.get("predicted_width") else nan
                widths.append(
                    [
                        names[scale],
                        str(seed["seed"]),
                        share,
                        str(cell["judgements"]),
                        pm(cell["predicted_width"], cell.get("predicted_width_se")),
                        pm(cell["ci_width"], cell.get("ci_width_se")),
                        f"{ratio:.2f}",
                    ]
                )
    head = (
        f"λ\\* with the Analysis page's estimator ({result.get('lambda_estimator', 'the page')}), {result['replicates']} "
        f"simulated studies per design, {result.get('resamples', '?')} bootstrap resamples each (the page draws 1,000), budget "
        f"{result['budget']} judgements, a pool of {result['pool']} dialogues; ± one Monte-Carlo SE. Predicted: the "
        "designer's figures as the page and the CLI show them; *saving, promised*: 1 − the proposal's judgements / the "
        "judgements uniform k = 3 needs for the proposal's predicted width; *on its widths*: the measured saving's "
        "definition applied to the predicted widths; *measured*: 1 − the judgements the designer needs for uniform's mean "
        "width (interpolated over the budget shares below) / uniform's judgements; *coverage*: of the pool's λ\\* by the "
        f"designer's intervals (a coverage of 0.95 is measured to ±{(0.95 * 0.05 / result['replicates']) ** 0.5:.3f}). "
        f"{_meta('designer-lambda', data)}"
    )
    header = [
        "scale",
        "seed",
        "ICC",
        "n + overlap",
        "designer: predicted width",
        "measured",
        "uniform k = 3: predicted",
        "measured",
        "saving: promised",
        "on its widths",
        "measured",
        "coverage",
    ]
    second = ["scale", "seed", "share of budget", "judgements", "predicted width", "measured mean width", "measured / predicted"]
    shares = "The designer's widths at each share of the budget:"
    return head + "\n\n" + table(header, body) + f"\n\n{shares}\n\n" + table(second, widths)


def include(path: str) -> str:
    text = (REPO / path.strip()).read_text(encoding="utf-8")
    return re.sub(r"\A# [^\n]*\n", "", text, count=1)


GENERATORS = {
    "cli": cli,
    "openapi": api,
    "settings": settings,
    "export-formats": export_formats,
    "bench": bench,
    "bench-rest": bench_rest,
    "coverage": coverage,
    "systems": systems,
    "designer": designer,
    "include": include,
}
