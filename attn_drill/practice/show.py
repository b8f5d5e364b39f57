"""What `attn-drill show` says about each head, in plain Python (no torch, no rich): the numbers the tutorials
compute to show how heads specialise, for the user's weights and the reference's, and where they differ.

A map is a list of rows (queries), each a list of weights over the keys; None stands for NaN (the worker sends
it so). Used by the terminal drawing (render/show.py) and the image (render/png.py) alike.

- entropy: each query's -sum p log2 p over its keys, in bits, averaged over the queries that see a key: 0 for a
  head that looks at one key per query, log2(Tk) for one that spreads evenly;
- strongest key: each query's argmax, the key a head mostly reads (a head that always picks the previous token,
  the first token, itself...).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

DIFF = 0.05  # a weight farther than this from the reference's is marked
ENTROPY_DIFF = 0.05  # bits
REST = 5e-3  # a row of the reference summing to less than 1 by more than this leaves a share to a sink (the worker
#              sends weights rounded to 4 decimals: a row of 8 that sums to 1 may be off by 4e-4)


def row_entropy(row: list) -> float | None:
    """Bits; None for a row with a NaN or no weight at all (a query that sees no key)."""
    if any(p is None for p in row) or sum(row) <= 1e-9:
        return None
    return -sum(p * math.log2(p) for p in row if p > 0) + 0.0  # + 0.0: never -0.0


def entropy(m: list[list]) -> float | None:
    """The mean of the rows' entropies; None when no row has one."""
    es = [e for e in map(row_entropy, m) if e is not None]
    return sum(es) / len(es) if es else None


def strongest(m: list[list]) -> list[int | None]:
    """Each query's strongest key (the first of equals); None for a row with a NaN or no weight."""
    out = []
    for row in m:
        if any(p is None for p in row) or max(row, default=0) <= 1e-9:
            out.append(None)
        else:
            out.append(max(range(len(row)), key=lambda j: row[j]))
    return out


def _differs(a, b) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    return abs(a - b) > DIFF


@dataclass
class Head:
    """One head: the user's map (None when there is none to draw) beside the reference's, and how they differ."""
    index: int
    yours: list[list] | None
    reference: list[list]
    cells: set = field(default_factory=set)  # (query, key) where the weights differ by more than DIFF
    tops: list[int] = field(default_factory=list)  # queries whose strongest key differs

    @property
    def entropies(self) -> tuple[float | None, float | None]:
        return (entropy(self.yours) if self.yours is not None else None), entropy(self.reference)

    @property
    def entropy_differs(self) -> bool:
        y, r = self.entropies
        return y is not None and r is not None and abs(y - r) > ENTROPY_DIFF

    @property
    def same(self) -> bool:
        return self.yours is not None and not self.cells and not self.tops

    @property
    def rest(self) -> tuple[list | None, list] | None:
        """What each query's weights leave of 1 (a sink's share), yours and the reference's; None when every row of
        the reference sums to 1."""
        def left(m):
            return [None if any(p is None for p in row) else 1.0 - sum(row) for row in m]

        ref = left(self.reference)
        if all(r is None or abs(r) < REST for r in ref):
            return None
        return (left(self.yours) if self.yours is not None else None), ref

    @property
    def size(self) -> int:
        return sum(len(r) for r in self.reference)


def heads(item: dict) -> list[Head]:
    """The heads of one map of the worker's result ({"yours", "reference"}), compared."""
    out = []
    yours = item.get("yours")
    for h, ref in enumerate(item.get("reference") or []):
        y = yours[h] if yours is not None and h < len(yours) else None
        head = Head(h, y, ref)
        if y is not None:
            head.cells = {(i, j) for i, (ry, rr) in enumerate(zip(y, ref)) for j, (a, b) in enumerate(zip(ry, rr))
                          if _differs(a, b)}
            head.tops = [i for i, (a, b) in enumerate(zip(strongest(y), strongest(ref))) if a != b]
        out.append(head)
    return out
