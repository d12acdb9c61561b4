"""kube-scheduler's score scale and its default normalisation, shared by Volcano's
nodeorder plugin and the kube-style plugins."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["MAX_NODE_SCORE", "default_normalize"]

#: kube-scheduler's ``framework.MaxNodeScore``.
MAX_NODE_SCORE = 100


def default_normalize(scores: Sequence[int], *, reverse: bool) -> list[int]:
    """kube-scheduler's ``DefaultNormalizeScore(100, reverse)``: each score scaled to
    0..100 by the highest (Go's integer division, toward zero), reversed (100 less it) if asked; all
    scores 0 give 100 each reversed, 0 each otherwise."""
    top = max([0, *scores])
    if top == 0:
        return [MAX_NODE_SCORE if reverse else s for s in scores]
    # Go's integer division rounds toward zero (a negative score rounds up).
    out = [MAX_NODE_SCORE * s // top if s >= 0 else -(MAX_NODE_SCORE * -s // top)
           for s in scores]
    return [MAX_NODE_SCORE - s for s in out] if reverse else out
