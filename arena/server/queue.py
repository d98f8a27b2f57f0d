"""The worker's queues: versions to check, scrimmages and game analyses. Each is a model with a `status`,
taken oldest first and marked as being worked on in one transaction (so a second worker passes it over),
and put back at a worker's start where a crash or a kill cut the work off. What a student adds to one is
counted over any 24 hours against the class's daily number."""

from __future__ import annotations

from datetime import timedelta
from typing import TypeVar

from django.db import models, transaction
from django.utils import timezone

DAY = timedelta(days=1)

Row = TypeVar("Row", bound=models.Model)


def claim_oldest(model: type[Row], queued: str, working: str, *related: str) -> Row | None:
    """The oldest row `queued`, now marked `working`; None if there is none."""
    with transaction.atomic():
        waiting = model._default_manager.select_for_update().filter(status=queued).order_by("id")
        found = waiting.select_related(*related).first() if related else waiting.first()
        if found is None:
            return None
        found.status = working  # type: ignore[attr-defined]
        found.save(update_fields=["status"])
        return found


def requeue(model: type[models.Model], working: str, queued: str) -> int:
    """Rows a stopped worker left `working` go back to the queue; how many."""
    return model._default_manager.filter(status=working).update(status=queued)


def over_the_day(
    model: type[models.Model], member: models.Model, limit: int, one: str, many: str
) -> str | None:
    """Why `member` may not ask for another `one` today (they asked `limit` in the last 24 hours), or None.
    Call it in the transaction that adds the row, so two requests at once count each other."""
    asked = model._default_manager.filter(member=member, created__gte=timezone.now() - DAY).count()
    if asked < limit:
        return None
    return (
        f"you have asked for {asked} {one if asked == 1 else many} in the last 24 hours, the class's limit: "
        "the next one when the oldest of them is a day old"
    )
