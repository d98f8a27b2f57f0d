from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("classroom", "0008_classroom_kgp_no_move"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="folder",
            field=models.CharField(blank=True, default="", max_length=255),
        ),
    ]
