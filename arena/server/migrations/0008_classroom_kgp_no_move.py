from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("classroom", "0007_classroom_kgp_ranked"),
    ]

    operations = [
        migrations.AddField(
            model_name="classroom",
            name="kgp_no_move",
            field=models.CharField(default="random", max_length=8),
        ),
    ]
