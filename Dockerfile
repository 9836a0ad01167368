# The effectledger jar and its libraries; build them first with ./mvnw -B -DskipTests package.
FROM eclipse-temurin:17-jre
# curl for docker-compose.yml's healthchecks (/readyz of the processor, executor and gateway).
RUN apt-get update && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY app/target/effectledger.jar /app/effectledger.jar
COPY app/target/lib /app/lib
COPY config /app/config
ENTRYPOINT ["java", "-jar", "/app/effectledger.jar"]
