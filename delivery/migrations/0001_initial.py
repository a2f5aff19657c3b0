"""The Delivery model moves here from `routing`: state only, the table `routing_delivery` stays as it is.

No row is copied and no index rebuilt (a hot, large table); the content type follows, so admin
history and permissions keep pointing at the model.
"""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


def _move_content_type(source: str, target: str):
    def move(apps, schema_editor):
        ContentType = apps.get_model("contenttypes", "ContentType")
        if not ContentType.objects.filter(app_label=target, model="delivery").exists():
            ContentType.objects.filter(app_label=source, model="delivery").update(app_label=target)

    return move


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('accounts', '0001_initial'),
        ('integrations', '0001_initial'),
        ('traces', '0004_trace_fk_indexes_dropped'),
        ('routing', '0004_delivery_partial_indexes'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
            migrations.CreateModel(
                name='Delivery',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('destination', models.CharField(help_text='Integration name, or platform for ad-hoc targets.', max_length=200)),
                    ('spec', models.JSONField(default=dict, help_text='The destination as routed: tags, url, fallback chain.')),
                    ('rule_name', models.CharField(blank=True, max_length=200)),
                    ('status', models.CharField(choices=[('pending', 'Pending'), ('sending', 'Sending'), ('delivered', 'Delivered'), ('failed', 'Failed'), ('dead', 'Dead')], default='pending', max_length=10)),
                    ('attempts', models.PositiveIntegerField(default=0, help_text='Sends tried since creation or the last replay.')),
                    ('next_attempt_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('claimed_at', models.DateTimeField(blank=True, null=True)),
                    ('claim_token', models.UUIDField(blank=True, null=True)),
                    ('dispatched_at', models.DateTimeField(blank=True, null=True)),
                    ('delivered_at', models.DateTimeField(blank=True, null=True)),
                    ('last_error', models.TextField(blank=True)),
                    ('last_status_code', models.PositiveIntegerField(blank=True, null=True)),
                    ('replay_count', models.PositiveIntegerField(default=0)),
                    ('replayed_at', models.DateTimeField(blank=True, null=True)),
                    ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                    ('fallback_of', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='fallbacks', to='delivery.delivery')),
                    ('integration', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='deliveries', to='integrations.integration')),
                    ('team', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='accounts.team')),
                    ('trace', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='traces.trace')),
                ],
                options={
                    'db_table': 'routing_delivery',
                    'indexes': [models.Index(condition=models.Q(('status__in', ['pending', 'sending'])), fields=['next_attempt_at'], name='delivery_due'), models.Index(fields=['team', '-id'], name='delivery_team_feed'), models.Index(condition=models.Q(('status__in', ['failed', 'dead'])), fields=['team', 'status', '-id'], name='delivery_team_status'), models.Index(condition=models.Q(('fallback_of__isnull', False)), fields=['fallback_of'], name='delivery_fallback_of'), models.Index(fields=['team', 'destination', '-id'], name='delivery_team_destination')],
                    'constraints': [models.UniqueConstraint(fields=('trace', 'destination'), name='delivery_unique_trace_destination')],
                },
            ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(_move_content_type("routing", "delivery"), _move_content_type("delivery", "routing")),
    ]
