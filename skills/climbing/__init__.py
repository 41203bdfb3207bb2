"""Seed 004's climbing cores: gait on the footholds' plane, swings, LRST, MD and the GIA margin.

Pure numerics (numpy, scipy, ``limbtree.kinematics``), no plant and no I/O:

* :mod:`.plane`: the footholds' regression plane and the desired base pose on it, with
  eq. 1's raise over the terrain (:func:`desired_base_pose`).
* :mod:`.gait`: the periodic crawl gait (:class:`CrawlGait`: rear legs first,
  ``T = 2 n T_sw``), the next foothold (:func:`advance_foothold`) and the support phase's
  base polynomial (:class:`BaseMotion`).
* :mod:`.swing`: the baseline's two cubic segments (:class:`CubicSwing`) and the 7th-order
  Bezier of eq. 2 (:class:`BezierSwing`).
* :mod:`.leg`: the closed-form kinematics of a yaw-pitch-pitch leg (:class:`PlanarLeg`).
* :mod:`.lrst`: eq. 2 and its SLSQP optimisation (:class:`LrstProblem`, :func:`optimise_swing`).
* :mod:`.md`: eqs. 3-6, momentum distribution weighted by manipulability
  (:func:`distribute_momentum`, :func:`plan_swing_motion`).
* :mod:`.stability`: the GIA stability margin (:func:`gia_margin`).
"""

from limbtree.skills.climbing.errors import ClimbingError, ClimbingInputError, LegGeometryError
from limbtree.skills.climbing.gait import (
    BaseMotion,
    BaseSample,
    CrawlGait,
    GaitPhase,
    PhaseKind,
    Profile,
    advance_foothold,
    rear_first_order,
)
from limbtree.skills.climbing.leg import LegSolution, PlanarLeg
from limbtree.skills.climbing.lrst import (
    LrstMethod,
    LrstProblem,
    LrstResult,
    LrstTerms,
    LrstWeights,
    optimise_swing,
)
from limbtree.skills.climbing.md import (
    AlphaLimits,
    Distribution,
    SwingMotion,
    base_velocity,
    distribute_momentum,
    distribution_factor,
    integrate_pose,
    manipulability,
    plan_swing_motion,
    support_rates,
)
from limbtree.skills.climbing.plane import (
    HEADING,
    UP,
    BaseFootprint,
    BaseTarget,
    HeightFunction,
    RegressionPlane,
    base_penetration,
    desired_base_pose,
    fit_plane,
    level_base_pose,
)
from limbtree.skills.climbing.stability import GiaMargin, counter_clockwise, gia_margin
from limbtree.skills.climbing.swing import (
    BEZIER_DEGREE,
    BezierSwing,
    CubicSwing,
    Swing,
    SwingSample,
    apex_point,
    bernstein,
    bezier_basis,
    bezier_control_points,
    swing_heights,
)

__all__ = [
    "BEZIER_DEGREE",
    "HEADING",
    "UP",
    "AlphaLimits",
    "BaseFootprint",
    "BaseMotion",
    "BaseSample",
    "BaseTarget",
    "BezierSwing",
    "ClimbingError",
    "ClimbingInputError",
    "CrawlGait",
    "CubicSwing",
    "Distribution",
    "GaitPhase",
    "GiaMargin",
    "HeightFunction",
    "LegGeometryError",
    "LegSolution",
    "LrstMethod",
    "LrstProblem",
    "LrstResult",
    "LrstTerms",
    "LrstWeights",
    "PhaseKind",
    "PlanarLeg",
    "Profile",
    "RegressionPlane",
    "Swing",
    "SwingMotion",
    "SwingSample",
    "advance_foothold",
    "apex_point",
    "base_penetration",
    "base_velocity",
    "bernstein",
    "bezier_basis",
    "bezier_control_points",
    "counter_clockwise",
    "desired_base_pose",
    "distribute_momentum",
    "distribution_factor",
    "fit_plane",
    "gia_margin",
    "integrate_pose",
    "level_base_pose",
    "manipulability",
    "optimise_swing",
    "plan_swing_motion",
    "rear_first_order",
    "support_rates",
    "swing_heights",
]
