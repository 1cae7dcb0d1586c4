"""The dsg_mirror's parameters: its table and its typed settings, with the mirror's policies built from them."""
from __future__ import annotations

from dataclasses import dataclass

from heracles_ros.mirror.additions import AdditionSettings
from heracles_ros.mirror.history import HistorySettings
from heracles_ros.ros import interfaces
from heracles_ros.ros.node_settings import ADDITION_MERGE_RADIUS, COMMON, INSTANCE_CHECK, NodeSettings
from heracles_ros.scene.io import DEFAULT_MAX_SNAPSHOT_BYTES
from heracles_ros.settings import Setting

PARAMETERS: tuple[Setting, ...] = (
    *COMMON,
    Setting("dsg_topic", interfaces.DSG_UPDATE.name, "hydra_msgs/msg/DsgUpdate topic with full scene-graph snapshots"),
    Setting("scene_file", "", "spark_dsg file (.json or binary) to mirror at start; empty: none"),
    Setting("allow_mass_removal", False, "apply snapshots that would remove most of the mirror (otherwise held "
            "back as suspect, e.g. the empty graph of a restarting Hydra)"),
    Setting("suspect_fraction", 0.5, "share of mirrored nodes a single snapshot may remove before it is suspect",
            minimum=0.0, maximum=1.0),
    Setting("suspect_min_nodes", 20, "mirrors smaller than this are never suspect", minimum=0),
    Setting("retry_period_s", 2.0, "seconds between retries while the database is unavailable",
            minimum=0.05, maximum=3600.0),
    Setting("batch_size", 5000, "rows per database statement", minimum=1, maximum=1_000_000),
    Setting("query_timeout_s", 60.0, "per-query time limit of the database, in seconds",
            minimum=0.1, maximum=3600.0),
    Setting("history", True, "record the scene's history (Change / Seen nodes: what appeared, disappeared, moved, "
            "was relabelled or renamed, and when)"),
    Setting("move_threshold_m", HistorySettings.move_threshold_m,
            "a node counts as moved only this far from where the history last recorded it (map optimisation "
            "nudges everything a little)", minimum=0.0, maximum=1000.0),
    ADDITION_MERGE_RADIUS,
    Setting("addition_confirm_snapshots", AdditionSettings.confirm_snapshots,
            "a perceived object retires an addition only once seen in this many snapshots in a row (one spurious "
            "detection replaces nothing; the addition comes back when the object disappears)",
            minimum=1, maximum=1000),
    Setting("addition_confirm_s", AdditionSettings.confirm_s,
            "... and over snapshots whose stamps span at least this many seconds", minimum=0.0, maximum=3600.0),
    Setting("max_snapshot_bytes", DEFAULT_MAX_SNAPSHOT_BYTES,
            "a DsgUpdate (or the scene file) larger than this is refused before it is decoded; every length it "
            "declares is checked against its bytes first", minimum=1024, maximum=2**34),
    Setting("history_max_age_s", HistorySettings.max_age_s,
            "history events older than this are pruned; 0: no age limit", minimum=0.0),
    Setting("history_max_changes", HistorySettings.max_changes,
            "at most this many history events are kept (oldest pruned first); 0: no count limit", minimum=0),
    Setting("history_max_seen", HistorySettings.max_seen,
            "at most this many Seen entries (one per node with an event) are kept; those of nodes gone longest are "
            "pruned first, a node in the scene keeps its entry; 0: no count limit", minimum=0),
    Setting("moved_markers_window_s", 600.0, "history_markers show what moved within this many seconds before the "
            "newest snapshot (refreshed every 2 s); 0: no markers", minimum=0.0),
    Setting("marker_frame", "map", "frame of the history and scene markers (Hydra's map frame)"),
    Setting("scene_markers_period_s", 5.0, "scene_markers (rooms, places, perceived objects) are rebuilt from the "
            "database at most this often, in seconds, once a snapshot was mirrored (a rebuild of the "
            "kilometre-scale scene: ~0.3 s of reads, ~0.1 s to build); 0: no scene markers",
            minimum=0.0, maximum=3600.0),
    Setting("scene_markers_max", 10_000, "at most this many scene_markers per namespace (two per room or object; "
            "the rest are left out, with a warning)", minimum=2, maximum=1_000_000),
    INSTANCE_CHECK,
    Setting("status_period_s", 5.0, "republish the last status this often even without snapshots; 0: only on "
            "change", minimum=0.0, maximum=3600.0),
)
#: Parameters that may change while the node runs (the Mirror attributes of the same names, and the loop's period).
RUNTIME_PARAMETERS = frozenset({"allow_mass_removal", "suspect_fraction", "suspect_min_nodes", "retry_period_s"})


@dataclass(frozen=True)
class MirrorSettings(NodeSettings):
    """The node's parameters as given at start (the run-time ones then change on the mirror itself)."""

    dsg_topic: str
    scene_file: str
    allow_mass_removal: bool
    suspect_fraction: float
    suspect_min_nodes: int
    retry_period_s: float
    batch_size: int
    query_timeout_s: float
    history: bool
    move_threshold_m: float
    addition_merge_radius_m: float
    addition_confirm_snapshots: int
    addition_confirm_s: float
    max_snapshot_bytes: int
    history_max_age_s: float
    history_max_changes: int
    history_max_seen: int
    moved_markers_window_s: float
    marker_frame: str
    scene_markers_period_s: float
    scene_markers_max: int
    instance_check_s: float
    status_period_s: float

    def history_settings(self) -> HistorySettings:
        """What the history records and keeps."""
        return HistorySettings(
            enabled=self.history,
            move_threshold_m=self.move_threshold_m,
            max_age_s=self.history_max_age_s,
            max_changes=self.history_max_changes,
            max_seen=self.history_max_seen,
        )

    def addition_settings(self) -> AdditionSettings:
        """When a perceived object retires an operator's addition."""
        return AdditionSettings(merge_radius_m=self.addition_merge_radius_m,
                                confirm_snapshots=self.addition_confirm_snapshots,
                                confirm_s=self.addition_confirm_s)
