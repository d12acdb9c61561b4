"""Why a job or task is pending, and what would let it start.

:func:`explain` reads one session's reasons (:mod:`batchsched.explain.report`);
:func:`counterfactuals` searches the smallest changes that let the job start,
each checked by a session (:mod:`batchsched.explain.counterfactuals`).
"""

from batchsched.explain.counterfactuals import counterfactuals
from batchsched.explain.report import explain, quota_gaps, render

__all__ = ["counterfactuals", "explain", "quota_gaps", "render"]
