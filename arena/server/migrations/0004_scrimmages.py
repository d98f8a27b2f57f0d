"""Scrimmages: a student's unranked games against a bot of the ladder, and the class's daily limit."""

from __future__ import annotations

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("classroom", "0003_undo_seconds")]

    operations = [
        migrations.AddField(
            model_name="classroom",
            name="scrimmages_per_day",
            field=models.PositiveIntegerField(default=10),
        ),
        migrations.CreateModel(
            name="Scrimmage",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("opponent", models.CharField(max_length=100)),
                ("created", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("queued", "waiting to be played"),
                            ("playing", "being played"),
                            ("done", "played"),
                            ("failed", "could not be played"),
                        ],
                        default="queued",
                        max_length=10,
                    ),
                ),
                ("note", models.TextField(blank=True, default="")),
                (
                    "member",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="scrimmages",
                        to="classroom.member",
                    ),
                ),
                (
                    "submission",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="classroom.submission",
                    ),
                ),
            ],
            options={"ordering": ["-id"]},
        ),
    ]
