from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("routing", "0006_sampling_policy_plural"),
    ]

    operations = [
        migrations.AddField(
            model_name="routingrule",
            name="service",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
    ]
