"""A label's value codes per node, and the look-up that replaces ``np.isin``."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from batchsched.api import Resource
from batchsched.api.node import NodeInfo
from batchsched.columnar.kube_columns import LabelCodes
from batchsched.columnar.node_columns import NodeColumns


@given(values=st.lists(st.sampled_from([None, "a", "b", "c", "d"]), min_size=1, max_size=30),
       wanted=st.lists(st.integers(0, 3), max_size=5))
def test_among_is_isin_over_the_codes(values: list[str | None], wanted: list[int]) -> None:
    nodes = [NodeInfo.create(f"n{i}", Resource(1000, 1), labels={} if v is None else {"k": v})
             for i, v in enumerate(values)]
    labels = LabelCodes(NodeColumns(nodes), "k")
    taken = [code for code in wanted if code < len(labels.values)]
    expected = np.isin(labels.codes, taken)
    assert labels.among(taken).tolist() == expected.tolist()
    assert not labels.among(taken)[labels.codes < 0].any()  # an absent label is never among
