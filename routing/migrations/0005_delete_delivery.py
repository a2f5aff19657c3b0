"""Delivery moved to the `delivery` app (see delivery/0001_initial): forget it here, keep the table."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('routing', '0004_delivery_partial_indexes'),
        ('delivery', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='Delivery')],
            database_operations=[],
        ),
    ]
