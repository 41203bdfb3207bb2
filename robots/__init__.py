"""Robot descriptions (URDF and limb metadata) and the registry that loads them.

``load_robot("heavy_limb")`` gives a :class:`RobotSpec`: its limbs, their joints, speed
limits, grippers and postures, and ``spec.chain("arm")`` the limb's kinematic chain. Robots
are looked for in the directories of ``LIMBTREE_ROBOT_PATH`` and then among the shipped ones
(``docs/robots.md`` shows how to add your own).

The drivers a limb agent serves are here too (``docs/drivers.md``): :class:`HardwareDriver`,
the base class of real limbs, :class:`SimulatedLimb` with its non-idealities,
the plants an agent serves (:class:`KinematicPlant`, :func:`make_plant`) and the fault decorator
around them (:class:`FaultyPlant`),
:class:`MotionCapture`, and :func:`make_driver`. The self-assembly world of seed 002
(``docs/world.md``): modules to grasp (:func:`load_module`) and :class:`AssemblyLimb`, a
simulated limb that grasps them and publishes motion-capture observations.
"""

from limbtree.robots.assembly import AssemblyLimb, WorldError, WorldModule, world_from_json
from limbtree.robots.driver import HardwareDriver, JointReading
from limbtree.robots.errors import (
    RobotDescriptionError,
    RobotsError,
    UnknownLimbError,
    UnknownPostureError,
    UnknownRobotError,
)
from limbtree.robots.factory import UnknownDriverError, make_driver, make_plant
from limbtree.robots.faulty import FaultyPlant
from limbtree.robots.kinematic import KinematicPlant
from limbtree.robots.listing import format_robot_table
from limbtree.robots.mocap import MocapFrame, MotionCapture, MotionCaptureError
from limbtree.robots.modules import (
    GraspPoint,
    GraspTolerance,
    ModuleDescriptionError,
    ModuleSpec,
    UnknownGraspPointError,
    UnknownModuleError,
    load_module,
    load_module_file,
    module_names,
)
from limbtree.robots.registry import (
    METADATA_FILE,
    ROBOT_PATH_ENV,
    JointKind,
    JointSpec,
    LimbSpec,
    RobotSpec,
    builtin_robot_dir,
    load_robot,
    load_robot_file,
    load_robots,
    robot_names,
    robot_search_path,
)
from limbtree.robots.sim import (
    SIM_OPTION_LIMITS,
    OptionLimit,
    SimConfig,
    SimConfigError,
    SimulatedLimb,
)
from limbtree.transport.faults import ScheduledFault

__all__ = [
    "METADATA_FILE",
    "ROBOT_PATH_ENV",
    "SIM_OPTION_LIMITS",
    "AssemblyLimb",
    "FaultyPlant",
    "GraspPoint",
    "GraspTolerance",
    "HardwareDriver",
    "JointKind",
    "JointReading",
    "JointSpec",
    "KinematicPlant",
    "LimbSpec",
    "MocapFrame",
    "ModuleDescriptionError",
    "ModuleSpec",
    "MotionCapture",
    "MotionCaptureError",
    "OptionLimit",
    "RobotDescriptionError",
    "RobotSpec",
    "RobotsError",
    "ScheduledFault",
    "SimConfig",
    "SimConfigError",
    "SimulatedLimb",
    "UnknownDriverError",
    "UnknownGraspPointError",
    "UnknownLimbError",
    "UnknownModuleError",
    "UnknownPostureError",
    "UnknownRobotError",
    "WorldError",
    "WorldModule",
    "builtin_robot_dir",
    "format_robot_table",
    "load_module",
    "load_module_file",
    "load_robot",
    "load_robot_file",
    "load_robots",
    "make_driver",
    "make_plant",
    "module_names",
    "robot_names",
    "robot_search_path",
    "world_from_json",
]
