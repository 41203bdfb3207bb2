"""One limb's distance to a fixed pose along a LERP+SLERP segment, in closed form.

This is the scalar core of the exact clamp (``docs/clamp.md``). Along the segment from ``S``
to ``F`` (seed 000 eq. 6), the squared ``d_SE`` (eq. 7) to the center ``Y`` is

    g(t) + 1 = d(t)^2 = A t^2 + B t + C + (theta(t) / r_e)^2,

where the quadratic is the translational part and ``theta(t)``, the rotation angle from
``Y`` to the SLERP at ``t``, is ``2 atan2(sqrt(R^2 sin^2 w + K), |R cos w|)`` with
``w = omega t - phi``: the SLERP runs along a great circle of S^3 through ``q_S`` at unit
speed ``omega``, ``R`` is the norm of ``q_Y``'s projection on that circle's plane, ``phi`` its
angle there, and ``K = 1 - R^2`` the squared rest.

``theta`` is convex in ``t`` wherever ``cos w`` keeps its sign, and reaches ``pi`` (a
concave kink) where ``cos w = 0``; so ``g`` is convex on every piece between kinks. Plain
``math`` on Python floats: for the limb counts of a robot this is several times faster than
numpy's per-call overhead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: Newton stops when its step is below this fraction of t.
NEWTON_TOL = 1e-15
NEWTON_MAX_ITERATIONS = 200
#: Newton's last iterate is pushed inside until ``d^2 <= 1 - SAFETY``, so that the point,
#: recomputed from poses with other rounding, still lies within the sphere.
SAFETY = 1e-12

_EMPTY = (math.inf, -math.inf)
_HALF_PI = 0.5 * math.pi


class SegmentDistance:
    """``g(t) = d_SE(T(t, S, F), Y)^2 - 1`` of one limb, with its slope and feasible bounds.

    Args:
        center_p: ``Y``'s position [m].
        center_q: ``Y``'s unit quaternion, scalar last.
        start_p: ``S``'s position [m].
        start_q: ``S``'s unit quaternion.
        end_p: ``F``'s position [m].
        end_q: ``F``'s unit quaternion.
        inv_p_e: ``1 / p_e`` [1/m], 0 to ignore translation.
        inv_r_e: ``1 / r_e`` [1/rad], 0 to ignore rotation.
    """

    __slots__ = ("A", "B", "C", "K", "R", "inv_r2", "omega", "phi")

    def __init__(
        self,
        center_p: Sequence[float],
        center_q: Sequence[float],
        start_p: Sequence[float],
        start_q: Sequence[float],
        end_p: Sequence[float],
        end_q: Sequence[float],
        inv_p_e: float,
        inv_r_e: float,
    ) -> None:
        inv_p2 = inv_p_e * inv_p_e
        cx, cy, cz = center_p
        sx, sy, sz = start_p
        fx, fy, fz = end_p
        dx, dy, dz = fx - sx, fy - sy, fz - sz
        ex, ey, ez = sx - cx, sy - cy, sz - cz
        self.A = (dx * dx + dy * dy + dz * dz) * inv_p2
        self.B = 2.0 * (ex * dx + ey * dy + ez * dz) * inv_p2
        self.C = (ex * ex + ey * ey + ez * ez) * inv_p2
        self.inv_r2 = inv_r_e * inv_r_e
        if self.inv_r2 == 0.0:
            self.R, self.phi, self.K, self.omega = 1.0, 0.0, 0.0, 0.0
            return
        # Written out in scalars on purpose: this runs per limb per tick.
        x0, y0, z0, w0 = start_q
        x1, y1, z1, w1 = end_q
        xc, yc, zc, wc = center_q
        dot = x0 * x1 + y0 * y1 + z0 * z1 + w0 * w1
        if dot < 0.0:  # take the shortest arc
            x1, y1, z1, w1, dot = -x1, -y1, -z1, -w1, -dot
        diff = math.sqrt((x0 - x1) ** 2 + (y0 - y1) ** 2 + (z0 - z1) ** 2 + (w0 - w1) ** 2)
        total = math.sqrt((x0 + x1) ** 2 + (y0 + y1) ** 2 + (z0 + z1) ** 2 + (w0 + w1) ** 2)
        omega = 2.0 * math.atan2(diff, total)
        a = x0 * xc + y0 * yc + z0 * zc + w0 * wc
        if omega > 1e-12:
            xp, yp, zp, wp = x1 - dot * x0, y1 - dot * y0, z1 - dot * z0, w1 - dot * w0
            norm = math.sqrt(xp * xp + yp * yp + zp * zp + wp * wp)
            xp, yp, zp, wp = xp / norm, yp / norm, zp / norm, wp / norm
            b = xp * xc + yp * yc + zp * zc + wp * wc
        else:
            omega, xp, yp, zp, wp, b = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        rx, ry = xc - a * x0 - b * xp, yc - a * y0 - b * yp
        rz, rw = zc - a * z0 - b * zp, wc - a * w0 - b * wp
        self.K = rx * rx + ry * ry + rz * rz + rw * rw
        self.R = math.hypot(a, b)
        self.phi = math.atan2(b, a)
        self.omega = omega

    def sign(self, a: float, b: float) -> float:
        """The sign of ``cos w`` on a piece ``[a, b]`` holding no kink (taken at its middle)."""
        return -1.0 if math.cos(self.omega * 0.5 * (a + b) - self.phi) < 0.0 else 1.0

    def g(self, t: float, sign_v: float) -> float:
        """``d(t)^2 - 1`` on the piece where ``cos w`` has sign ``sign_v``."""
        trans = (self.A * t + self.B) * t + self.C
        if self.inv_r2 == 0.0:
            return trans - 1.0
        w = self.omega * t - self.phi
        u = self.R * math.sin(w)
        v = self.R * math.cos(w) * sign_v
        theta = 2.0 * math.atan2(math.sqrt(u * u + self.K), max(v, 0.0))
        return trans + theta * theta * self.inv_r2 - 1.0

    def g_slope(self, t: float, sign_v: float) -> tuple[float, float]:
        """``g(t)`` and ``dg/dt`` on the piece where ``cos w`` has sign ``sign_v``."""
        trans = (self.A * t + self.B) * t + self.C
        slope = 2.0 * self.A * t + self.B
        if self.inv_r2 == 0.0:
            return trans - 1.0, slope
        w = self.omega * t - self.phi
        u = self.R * math.sin(w)
        v = max(self.R * math.cos(w) * sign_v, 0.0)
        h = math.sqrt(u * u + self.K)
        theta = 2.0 * math.atan2(h, v)
        # d(theta^2)/dt = 4 omega u sign(cos w) theta / h, and theta / h -> 2 / |v| as h -> 0.
        ratio = theta / h if h > 1e-150 else 2.0 / max(v, 1e-300)
        slope += 4.0 * self.omega * u * sign_v * ratio * self.inv_r2
        return trans + theta * theta * self.inv_r2 - 1.0, slope

    def kinks(self, lo: float, hi: float) -> list[float]:
        """Instants in ``(lo, hi)`` where the rotation error reaches pi (``cos w = 0``)."""
        if self.omega <= 0.0 or self.inv_r2 == 0.0 or self.R == 0.0:
            return []
        k_lo = math.ceil((self.omega * lo - self.phi - _HALF_PI) / math.pi)
        k_hi = math.floor((self.omega * hi - self.phi - _HALF_PI) / math.pi)
        out = []
        for k in range(k_lo, k_hi + 1):
            t = (self.phi + _HALF_PI + k * math.pi) / self.omega
            if lo < t < hi:
                out.append(t)
        return out

    def bounds(self, a: float, b: float) -> tuple[float, float]:
        """An interval of ``[a, b]`` (a piece) holding every ``t`` with ``d(t) <= 1``.

        The intersection of the translational term's own sublevel set (closed form, a
        quadratic) and the rotational term's (closed form on a piece). Empty as ``lo > hi``.
        """
        lo_t, hi_t = quadratic_interval(self.A, self.B, self.C)
        lo_r, hi_r = self._rotation_interval(a, b)
        return max(lo_t, lo_r, a), min(hi_t, hi_r, b)

    def _rotation_interval(self, a: float, b: float) -> tuple[float, float]:
        if self.inv_r2 == 0.0:
            return a, b
        r_e = 1.0 / math.sqrt(self.inv_r2)
        if r_e >= math.pi:
            return a, b
        kappa = math.cos(0.5 * r_e)  # theta <= r_e  <=>  |R cos w| >= kappa
        if kappa > self.R:
            return _EMPTY
        if self.omega == 0.0:
            return (a, b) if abs(self.R * math.cos(self.phi)) >= kappa else _EMPTY
        alpha = math.acos(min(1.0, kappa / self.R))
        k = round((self.omega * 0.5 * (a + b) - self.phi) / math.pi)
        centre = self.phi + k * math.pi
        return (centre - alpha) / self.omega, (centre + alpha) / self.omega

    def largest_root(self, a: float, upper: float, sign_v: float) -> float | None:
        """The largest ``t`` in ``[a, upper]`` with ``g(t) <= -SAFETY``, or None.

        ``g`` is convex on the piece, and ``upper`` bounds its largest root from above, so
        Newton's iterates decrease monotonically onto that root (each tangent lies below
        ``g``). A non-positive slope while ``g > 0`` proves ``g > 0`` on all of ``[a, t]``.
        """
        t = upper
        for _ in range(NEWTON_MAX_ITERATIONS):
            g, slope = self.g_slope(t, sign_v)
            g += SAFETY
            if g <= 0.0:
                return t
            if slope <= 0.0:
                return None
            step = g / slope
            t -= step
            if t < a:
                return None
            if step <= NEWTON_TOL * max(1.0, abs(t)):
                # Converged onto the root from outside; nudge in by rounding steps.
                for _ in range(60):
                    if self.g(t, sign_v) + SAFETY <= 0.0:
                        return t
                    t -= max(step, 4e-16 * max(1.0, abs(t)))
                    step *= 2.0
                    if t < a:
                        return None
                return None
        return None


def quadratic_interval(A: float, B: float, C: float) -> tuple[float, float]:
    """``{t : A t^2 + B t + C <= 1}`` for ``A >= 0``, as ``(lo, hi)``; empty when lo > hi."""
    c1 = C - 1.0
    if A == 0.0:
        if B == 0.0:
            return (-math.inf, math.inf) if c1 <= 0.0 else _EMPTY
        root = -c1 / B
        return (-math.inf, root) if B > 0.0 else (root, math.inf)
    disc = B * B - 4.0 * A * c1
    if disc < 0.0:
        return _EMPTY
    q = -0.5 * (B + math.copysign(math.sqrt(disc), B))
    r1 = q / A
    r2 = c1 / q if q != 0.0 else r1
    return (min(r1, r2), max(r1, r2))


def largest_feasible_max_norm(
    limbs: Sequence[SegmentDistance], a: float, b: float, signs: Sequence[float]
) -> float | None:
    """The largest ``t`` in the piece ``[a, b]`` where every limb has ``d_i(t) <= 1``.

    Each limb's feasible set on the piece is an interval, so the stacked one (max norm) is
    their intersection: its top is the smallest of the limbs' largest roots, valid when every
    limb is inside there. Limbs are visited with a running upper bound, so a limb already
    inside at the bound costs one evaluation.
    """
    bound = b
    tops = []
    for limb in limbs:
        lo, hi = limb.bounds(a, b)
        if lo > hi:
            return None
        tops.append(hi)
        bound = min(bound, hi)
    if bound < a:
        return None
    # The limb with the lowest closed-form bound usually binds: visit it first, so the
    # others are most often inside at the running bound already and cost one evaluation.
    order = sorted(range(len(limbs)), key=tops.__getitem__)
    inside_at = [math.nan] * len(limbs)
    for i in order:
        root = limbs[i].largest_root(a, bound, signs[i])
        if root is None:
            return None
        bound = root
        inside_at[i] = root
    # Each limb's feasible set on the piece is an interval whose top is >= bound; the limbs
    # not yet seen inside at bound itself must still be checked against their lower ends.
    for i, limb in enumerate(limbs):
        if inside_at[i] != bound and limb.g(bound, signs[i]) + SAFETY > 0.0:
            return None
    return bound


def largest_feasible_k_norm(
    limbs: Sequence[SegmentDistance],
    a: float,
    upper: float,
    signs: Sequence[float],
    k: float,
) -> float | None:
    """The largest ``t`` in ``[a, upper]`` with ``sum_i d_i(t)^k <= 1`` (eq. 9 with ``ord = k``).

    ``sum_i d_i^k`` is convex on a piece (each ``d_i`` is convex and non-negative, ``k >= 1``)
    and ``upper``, the max-norm answer, bounds its largest root from above: Newton again.
    """
    t = upper
    for _ in range(NEWTON_MAX_ITERATIONS):
        total = -1.0 + SAFETY
        slope = 0.0
        for limb, sign_v in zip(limbs, signs, strict=True):
            g, g_slope = limb.g_slope(t, sign_v)
            d = math.sqrt(max(g + 1.0, 0.0))
            total += d**k
            if d > 0.0:
                slope += k * d ** (k - 1.0) * g_slope / (2.0 * d)
        if total <= 0.0:
            return t
        if slope <= 0.0:
            return None
        step = total / slope
        t -= max(step, 4e-16 * max(1.0, abs(t)))
        if t < a:
            return None
    return None
