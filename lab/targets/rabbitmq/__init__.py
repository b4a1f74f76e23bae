"""RabbitMQ as a target (lab.targets.rabbitmq.target)."""
