"""``replay(replayId, mode, task)``: VERIFY a recorded pack's items or RECOMPUTE it (scope replay:run)."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

import strawberry

from cairn.app import packs
from cairn.app import replay as rp
from cairn.app.governance import Governed, Principal
from cairn.resolvers.packs import AsOf, Citation, ContextPack, PackItemKind, to_pack
from cairn.resolvers.types import Info


@strawberry.enum(description="VERIFY re-checks recorded items against current documents; RECOMPUTE rebuilds the pack.")
class ReplayMode(Enum):
    VERIFY = "VERIFY"
    RECOMPUTE = "RECOMPUTE"


@strawberry.enum(
    description="UNCHANGED: the current version still holds the cited text (same hash); CHANGED: it does not; UNAVAILABLE: the document is deleted, not valid now, or not readable (also outside a bound credential's current set). A context-set entry is compared by its text's hash (UNAVAILABLE: deleted from the set, or the set deactivated)."
)
class ReplayItemStatus(Enum):
    UNCHANGED = "UNCHANGED"
    CHANGED = "CHANGED"
    UNAVAILABLE = "UNAVAILABLE"


@strawberry.type(description="A recorded item: its rank and citation (ids, span and hash; never text).")
class RecordedItem:
    rank: int
    kind: PackItemKind
    citation: Citation


@strawberry.type(description="VERIFY result for one recorded item.")
class ReplayItemCheck:
    rank: int
    kind: PackItemKind
    citation: Citation
    status: ReplayItemStatus
    current_version_id: strawberry.ID | None = strawberry.field(
        description='Null when UNAVAILABLE; for an approved context-set entry "<entry id>@<set version>".'
    )


@strawberry.type(description="An item in both packs at different ranks.")
class ReplayMove:
    kind: PackItemKind
    citation: Citation
    old_rank: int
    new_rank: int


@strawberry.type(description="RECOMPUTE diff, items keyed by (kind, passage or document id, SHA-256).")
class ReplayDiff:
    added: list[RecordedItem]
    removed: list[RecordedItem]
    moved: list[ReplayMove]
    unchanged: int = strawberry.field(description="Items at the same rank in both packs.")


@strawberry.type(description="What a replay answers.")
class ReplayResult:
    replay_id: strawberry.ID
    pack_id: strawberry.ID
    mode: ReplayMode
    recorded_at: datetime
    expires_at: datetime
    as_of: AsOf = strawberry.field(description="The recorded pack's asOf (both times).")
    items: list[ReplayItemCheck] = strawberry.field(description="VERIFY: one check per recorded item (RECOMPUTE: []).")
    pack: ContextPack | None = strawberry.field(description="RECOMPUTE: the rebuilt pack.")
    diff: ReplayDiff | None = strawberry.field(description="RECOMPUTE: recorded → rebuilt.")


def _cit(i: packs.RecordedItem) -> Citation:
    return Citation(
        document_id=strawberry.ID(i.document_id),
        version_id=strawberry.ID(i.version_id),
        passage_id=strawberry.ID(i.passage_id) if i.passage_id is not None else None,
        start=i.start,
        end=i.end,
        sha256=i.sha256,
        # a replay record keeps ids and hashes only (issue 14): no source names to show
        external_id="",
        document_title="",
        collection_id=strawberry.ID(""),
        collection_name="",
    )


def _rec(i: packs.RecordedItem) -> RecordedItem:
    return RecordedItem(rank=i.rank, kind=PackItemKind(i.kind), citation=_cit(i))


def to_result(r: rp.ReplayResult, info: Info) -> ReplayResult:
    """Service result → GraphQL result."""
    return ReplayResult(
        replay_id=strawberry.ID(r.replay_id),
        pack_id=strawberry.ID(r.pack_id),
        mode=ReplayMode(r.mode),
        recorded_at=r.recorded_at,
        expires_at=r.expires_at,
        as_of=AsOf(
            valid_time=datetime.fromisoformat(r.conditions["validTime"]),
            system_time=datetime.fromisoformat(r.conditions["systemTime"]),
        ),
        items=[
            ReplayItemCheck(
                rank=c.item.rank,
                kind=PackItemKind(c.item.kind),
                citation=_cit(c.item),
                status=ReplayItemStatus(c.status),
                current_version_id=strawberry.ID(c.current_version_id) if c.current_version_id is not None else None,
            )
            for c in r.checks
        ],
        pack=to_pack(r.pack, info) if r.pack is not None else None,
        diff=(
            ReplayDiff(
                added=[_rec(i) for i in r.added],
                removed=[_rec(i) for i in r.removed],
                moved=[
                    ReplayMove(
                        kind=PackItemKind(m.item.kind), citation=_cit(m.item), old_rank=m.old_rank, new_rank=m.new_rank
                    )
                    for m in r.moved
                ],
                unchanged=r.unchanged_ranks,
            )
            if r.mode == "RECOMPUTE"
            else None
        ),
    )


def _validate(replay_id: str, mode: ReplayMode, task: str | None = None) -> None:
    rp.validate_replay_request(rp.ReplayRequest(replay_id, mode.value, task))


@strawberry.type
class ReplayQuery:
    @strawberry.field(
        description="Replay a pack you made (scope replay:run): VERIFY its items against current documents, or RECOMPUTE it under its recorded conditions (task required: records keep only its SHA-256). Records expire after 30 days (AGENT_REPLAY_EXPIRED, 410); other credentials' packs are NOT_FOUND; non-retaining workspaces keep none (NOT_FOUND, reason NOT_RETAINED).",
        extensions=[Governed("replay", validate=_validate)],
    )
    async def replay(
        self, info: Info, replay_id: strawberry.ID, mode: ReplayMode, principal: Principal, task: str | None = None
    ) -> ReplayResult:
        r = await rp.replay_pack(info.context.services, principal, rp.ReplayRequest(replay_id, mode.value, task))
        return to_result(r, info)
