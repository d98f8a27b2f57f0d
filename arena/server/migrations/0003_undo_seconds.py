"""The freeze's undo window is the class's setting (a minute unless the teacher says otherwise)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("classroom", "0002_axes_throttle")]

    operations = [
        migrations.AddField(
            model_name="classroom", name="undo_seconds", field=models.PositiveIntegerField(default=60)
        )
    ]
