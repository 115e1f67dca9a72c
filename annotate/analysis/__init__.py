"""A study's analysis, in one direction: jobs -> cache -> study data -> ``metrics``.

- ``analysis_jobs``: the analysis a page asks for (first answers, then the whole), the warmer, the
  separate analysis process;
- ``analysis_cache``: the named key (``AnalysisKey``) and the results shared by every app server of a
  database (table ``analysis_results``, leases);
- ``study_data``: a study out of the store as plain data for ``metrics`` and ``exports``; the annotators
  left out of it;
- ``reports``: progress, annotator quality and allocation status (no analysis of its own).
- ``analysis_plan``: the frozen analysis plan in the store (frozen before the first vote) and the
  analysis-settings changes logged after the first vote; what they mean is ``exports.analysis_plan``.

It reads studies, votes and people; nothing below it imports it.
"""
