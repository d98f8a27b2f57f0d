"""The sign-in throttle moved to django-axes (throttle.py): its own table of failures goes."""

from __future__ import annotations

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("classroom", "0001_initial")]

    operations = [migrations.DeleteModel(name="SignInFailure")]
