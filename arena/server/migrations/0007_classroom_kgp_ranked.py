from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("classroom", "0006_classroom_kgp_options"),
    ]

    operations = [
        migrations.AddField(
            model_name="classroom",
            name="kgp_ranked",
            field=models.BooleanField(default=False),
        ),
    ]
