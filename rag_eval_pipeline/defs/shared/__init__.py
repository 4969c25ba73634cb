"""What every tier's folder uses: the partitions, the asset defaults, the resources' classes, the
Parquet IO manager, metadata helpers, the judge error-rate check."""
