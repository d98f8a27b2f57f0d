from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("classroom", "0007_classroom_kgp_ranked"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="folder",
            field=models.CharField(blank=True, default="", max_length=255),
        ),
    ]
