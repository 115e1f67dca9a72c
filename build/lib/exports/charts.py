"""Altair charts shared by the app, the CLI (``--plot``) and the reports.

Charts are built from the analysis JSON contracts, never from the database, so a plot in
the app and one from the command line are the same picture of the same numbers.
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd

R_TITLE = "Pearson r with human ratings"


def r_lambda_chart(calibration: dict, *, width: int = 520, height: int = 300) -> alt.Chart:
    """r(λ) with its bootstrap band, λ* marked, and JGA's r (λ = 0) as a reference line."""
    curve = pd.DataFrame(
        [
            {"lambda": p["lambda"], "r": p["r"], "low": (p["ci"] or [None, None])[0], "high": (p["ci"] or [None, None])[1]}
            for p in calibration["curve"]
        ]
    )
    x = alt.X("lambda:Q", title="λ")
    layers = []
    if curve["low"].notna().any():
        layers.append(
            alt.Chart(curve)
            .mark_area(opacity=0.25)
            .encode(x=x, y=alt.Y("low:Q", title=R_TITLE, scale=alt.Scale(zero=False)), y2="high:Q")
        )
    layers.append(alt.Chart(curve).mark_line().encode(x=x, y=alt.Y("r:Q", title=R_TITLE, scale=alt.Scale(zero=False))))
    best = pd.DataFrame([{"lambda": calibration["best_lambda"], "r": calibration["r_best"]}])
    layers.append(alt.Chart(best).mark_rule(strokeDash=[4, 3], color="firebrick").encode(x="lambda:Q"))
    layers.append(alt.Chart(best).mark_point(color="firebrick", size=60, filled=True).encode(x="lambda:Q", y="r:Q"))
    title = f"r(λ): best λ = {calibration['best_lambda']:.3f}, r = {calibration['r_best']:.3f}"
    return alt.layer(*layers).properties(width=width, height=height, title=title)


def metric_rating_chart(correlation: dict, metric: str, *, width: int = 360, height: int = 260) -> alt.Chart:
    """One point per dialogue: a metric against the human rating."""
    frame = pd.DataFrame([{"id": d["id"], "metric": d.get(metric), "rating": d["rating"]} for d in correlation["per_dialogue"]])
    frame = frame.dropna()
    return (
        alt.Chart(frame)
        .mark_circle(opacity=0.6)
        .encode(
            x=alt.X("metric:Q", title=metric),
            y=alt.Y("rating:Q", title="human rating"),
            tooltip=["id:N", "metric:Q", "rating:Q"],
        )
        .properties(width=width, height=height, title=f"{metric} vs human rating")
    )


def save_chart(chart: alt.Chart, path: str | Path) -> Path:
    """Write PNG, SVG or HTML by extension (PNG and SVG through vl-convert, offline)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".png", ".svg", ".html"):
        raise ValueError(f"{path}: the plot must end in .png, .svg or .html")
    if suffix == ".png":
        chart.save(str(path), format="png", scale_factor=2)
    else:
        chart.save(str(path), format=suffix[1:])
    return path


def png_bytes(chart: alt.Chart) -> bytes:
    """The chart as PNG bytes (for self-contained reports)."""
    import vl_convert as vlc

    return vlc.vegalite_to_png(chart.to_json(), scale=2)
