# The effectledger jar and its libraries; build them first with ./mvnw -B -DskipTests package.
FROM eclipse-temurin:17-jre
WORKDIR /app
COPY app/target/effectledger.jar /app/effectledger.jar
COPY app/target/lib /app/lib
COPY config /app/config
ENTRYPOINT ["java", "-jar", "/app/effectledger.jar"]
