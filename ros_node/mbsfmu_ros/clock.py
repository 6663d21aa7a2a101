"""One /clock per graph (docs/guides/ros2.md, "Two robots, one clock"): the node watches for other
publishers of /clock on its domain (rclpy's ``get_publishers_info_by_topic``, itself excluded),
says so (a log error naming them, the ``clock`` diagnostics status) and yields: it stops
publishing /clock (``clock_conflict: stop``) or follows the other one (``follow``).

Who yields is decided by ``yields`` and ``resumes`` (pure): before its first /clock a node looks
for another one for up to ``STARTUP_WINDOW`` and, finding one, yields at once (the newcomer: the
clock already running goes on, never back); of two running publishers that see each other, the
one whose fully qualified name sorts later yields from the third sighting on (time for a
newcomer to go first); any node yields once the conflict has lasted ``PERSIST`` checks (the other
one does not yield: a bag replay, another simulator). A node that yielded publishes /clock again
when no other publisher is left: at once if its name sorts first (two nodes started together
both yield as newcomers; the first by name takes over), after ``PERSIST`` checks otherwise (the
other one ended). So of two mbsfmu nodes exactly one publishes /clock.

``ClockMixin`` is one part of ``MbsNode``: it uses the node's ``pubs``, ``config``, ``follow_clock``,
``on_clock()`` and ``qos``.
"""

from __future__ import annotations

from collections.abc import Sequence

from rosgraph_msgs.msg import Clock

from . import diagnostics as dg
from . import topics as tp
from .config import CLOCK_CONFLICT

__all__ = ["CHECK_PERIOD", "CLOCK_CONFLICT", "PERSIST", "STARTUP_WINDOW", "ClockMixin", "resumes", "yields"]

CHECK_PERIOD = 0.5  # [s] of wall time between two looks at the graph while publishing /clock
# [s] of wall time the node looks for another /clock before publishing its first: longer than Fast
# DDS's participant announcement period (3 s), after which a graph already running is discovered
# even when the first announcements were missed (seen on a loaded machine: 3.0 s)
STARTUP_WINDOW = 3.5
UNKNOWN = "_NODE_NAME_UNKNOWN_"  # rmw's node name of an endpoint whose node is not discovered yet
PERSIST = 4  # checks after which a node yields whatever the names (the other one does not)


def yields(me: str, others: Sequence[str], published: bool, sightings: int) -> bool:
    """Whether this node (fully qualified name ``me``) gives up its /clock to ``others`` (other
    nodes' fully qualified names publishing /clock), having published one itself or not, after
    ``sightings`` consecutive checks that saw them."""
    if not others:
        return False
    if not published or sightings >= PERSIST:
        return True
    return sightings >= 3 and me > min(others)


def resumes(me: str, yielded_to: Sequence[str], absences: int) -> bool:
    """Whether a node that yielded /clock to ``yielded_to`` publishes it again, no other publisher
    having been seen for ``absences`` consecutive checks."""
    return absences >= 1 and (me < min(yielded_to) or absences >= PERSIST)


class ClockMixin:
    """Looks for other /clock publishers and yields; the ``clock`` diagnostics status."""

    def init_clock(self) -> None:
        self.clock_topic = self.resolve_topic_name(tp.ros_name(tp.CLOCK))  # remapping applied
        self.clock_others: list[str] = []  # other /clock publishers at the last check
        self.clock_sightings = 0  # consecutive checks that saw them
        self.clock_published = False  # this node has published a /clock
        self.clock_yielded_to: list[str] = []  # the publishers this node gave /clock up to
        self.clock_absences = 0  # consecutive checks, after yielding, that saw no other publisher
        self.clock_sub = None  # the /clock subscription of a node that follows after yielding

    def other_clock_publishers(self) -> list[str]:
        """Fully qualified names of the other nodes publishing on this node's /clock topic."""
        me = self.get_fully_qualified_name()
        names = set()
        for info in self.get_publishers_info_by_topic(self.clock_topic):
            ns = info.node_namespace.rstrip("/")
            name = f"{ns}/{info.node_name}"
            if name != me:
                names.add(name)
        return sorted(names)

    def check_clock(self) -> None:
        """Look at the graph once: while publishing /clock, yield if ``yields`` says so; after
        yielding, name the other publisher once DDS delivered its node name, and publish again if
        ``resumes`` says so."""
        if tp.CLOCK not in self.pubs:
            if not self.clock_yielded_to:  # follow_clock: never published one
                return
            others = self.other_clock_publishers()
            self.clock_absences = 0 if others else self.clock_absences + 1
            unnamed = any(UNKNOWN in n for n in self.clock_yielded_to)
            if others and unnamed and not any(UNKNOWN in n for n in others):
                self.clock_others = self.clock_yielded_to = others
                self.report_clock(others, yielded=True)
            elif resumes(self.get_fully_qualified_name(), self.clock_yielded_to, self.clock_absences):
                self.resume_clock()
            return
        others = self.other_clock_publishers()
        self.clock_sightings = self.clock_sightings + 1 if others else 0
        seen, self.clock_others = self.clock_others, others
        if yields(self.get_fully_qualified_name(), others, self.clock_published, self.clock_sightings):
            self.yield_clock(others)
        elif others and others != seen:
            self.report_clock(others, yielded=False)

    def yield_clock(self, others: list[str]) -> None:
        """Stop publishing /clock; with ``clock_conflict: follow`` step to the other one's instead."""
        self.destroy_publisher(self.pubs.pop(tp.CLOCK))
        self.clock_yielded_to = others
        if self.config.clock_conflict == "follow":
            self.follow_clock = True
            self.clock_ns = None
            self.clock_sub = self.create_subscription(Clock, tp.ros_name(tp.CLOCK), self.on_clock, self.qos)
        self.report_clock(others, yielded=True)

    def resume_clock(self) -> None:
        """Publish /clock again (no other publisher is left), pacing from the current state."""
        if self.clock_sub is not None:
            self.destroy_subscription(self.clock_sub)
            self.clock_sub, self.follow_clock, self.clock_ns = None, False, None
        self.pubs[tp.CLOCK] = self.create_publisher(Clock, tp.ros_name(tp.CLOCK), self.qos)
        self.get_logger().warning(
            f"{self.clock_topic}: no other publisher left ({', '.join(self.clock_yielded_to)} gone): "
            "this node publishes /clock again"
        )
        self.clock_yielded_to, self.clock_others, self.clock_sightings, self.clock_absences = [], [], 0, 0
        self.reanchor = True

    def report_clock(self, others: list[str], yielded: bool) -> None:
        """The log errors that name the other /clock publishers and what this node did."""
        names = ", ".join(others)
        if any(UNKNOWN in n for n in others):
            names += " (node name not discovered yet)"
        log = self.get_logger()
        log.error(
            f"another node publishes {self.clock_topic} on this domain: {names}; two clocks make sim time "
            "jump back and forth (give each robot its own domain, or let one node publish /clock: see "
            "clock_conflict)"
        )
        if yielded:
            what = (
                f"now follows the /clock of {names}"
                if self.follow_clock
                else f"stopped publishing /clock: {names} publishes it"
            )
            log.error(f"{self.clock_topic}: this node {what} (clock_conflict: {self.config.clock_conflict})")

    def clock_status(self) -> dg.Status:
        values = {
            "topic": self.clock_topic,
            "publishing": str(tp.CLOCK in self.pubs).lower(),
            "other_publishers": ", ".join(self.clock_others),
            "clock_conflict": self.config.clock_conflict,
        }
        if self.clock_yielded_to:
            what = "follows it" if self.follow_clock else "stopped publishing its own"
            return dg.Status(
                "clock",
                dg.WARN,
                f"another node publishes /clock ({', '.join(self.clock_yielded_to)}): this node {what} "
                f"(clock_conflict: {self.config.clock_conflict})",
                values,
            )
        if self.follow_clock:
            return dg.Status("clock", dg.OK, "following an external /clock (follow_clock)", values)
        if self.clock_others:
            return dg.Status(
                "clock",
                dg.ERROR,
                f"another node publishes /clock too: {', '.join(self.clock_others)}; sim time jumps back and forth",
                values,
            )
        return dg.Status("clock", dg.OK, "the only /clock publisher", values)
