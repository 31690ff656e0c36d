//! Kafka ACL bindings and the counter their changes bump.

use crate::acls::{
    AclBinding, AclError, AclFilter, AclOperation, AclPermission, PatternType, ResourceType,
};
use crate::backend::{on_db, Conn, Store};
use crate::StorageError;

/// A stored binding, as codes.
#[derive(sqlx::FromRow)]
struct AclRow {
    resource_type: i16,
    resource_name: String,
    pattern_type: i16,
    principal: String,
    host: String,
    operation: i16,
    permission: i16,
}

impl AclRow {
    fn decode(self) -> Result<AclBinding, AclError> {
        fn code<T>(value: i16, from: fn(i8) -> Option<T>, what: &str) -> Result<T, AclError> {
            i8::try_from(value).ok().and_then(from).ok_or_else(|| {
                StorageError::Corrupt(format!("ACL with {what} code {value}")).into()
            })
        }
        Ok(AclBinding {
            resource_type: code(self.resource_type, ResourceType::from_code, "resource type")?,
            resource_name: self.resource_name,
            pattern: code(self.pattern_type, PatternType::from_code, "pattern type")?,
            principal: self.principal,
            host: self.host,
            operation: code(self.operation, AclOperation::from_code, "operation")?,
            permission: code(self.permission, AclPermission::from_code, "permission")?,
        })
    }
}

/// Binds a binding's seven columns, in table order, as $1 to $7.
macro_rules! bind_columns {
    ($query:expr, $b:expr) => {
        $query
            .bind(i16::from($b.resource_type.code()))
            .bind(&$b.resource_name)
            .bind(i16::from($b.pattern.code()))
            .bind(&$b.principal)
            .bind(&$b.host)
            .bind(i16::from($b.operation.code()))
            .bind(i16::from($b.permission.code()))
    };
}

const SELECT_ALL: &str = "SELECT resource_type, resource_name, pattern_type, principal, host, \
     operation, permission FROM acls \
     ORDER BY resource_type, resource_name, pattern_type, principal, host, operation, permission";

/// Bumps the change counter inside the transaction of a change.
async fn bump(conn: Conn<'_>) -> Result<(), AclError> {
    on_db!(conn, conn => {
        sqlx::query("UPDATE acl_version SET version = version + 1 WHERE id = 1")
            .execute(conn)
            .await?;
    });
    Ok(())
}

/// Inserts `bindings`, those already stored staying as they are.
pub(crate) async fn create(store: &Store, bindings: &[AclBinding]) -> Result<(), AclError> {
    if bindings.is_empty() {
        return Ok(());
    }
    let mut tx = store.begin_write().await?;
    for b in bindings {
        on_db!(tx.conn(), conn => {
            let insert = sqlx::query(
                "INSERT INTO acls (resource_type, resource_name, pattern_type, principal, \
                 host, operation, permission) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT DO NOTHING",
            );
            bind_columns!(insert, b)
            .execute(conn)
            .await?;
        });
    }
    bump(tx.conn()).await?;
    tx.commit().await?;
    Ok(())
}

/// Every binding, in a stable order.
pub(crate) async fn all(store: &Store) -> Result<Vec<AclBinding>, AclError> {
    let rows: Vec<AclRow> = on_db!(store.reader(), pool =>
        sqlx::query_as(SELECT_ALL).fetch_all(pool).await?
    );
    rows.into_iter().map(AclRow::decode).collect()
}

/// Deletes the bindings each filter matches, in one transaction.
pub(crate) async fn delete(
    store: &Store,
    filters: &[AclFilter],
) -> Result<Vec<Vec<AclBinding>>, AclError> {
    let mut tx = store.begin_write().await?;
    let rows: Vec<AclRow> = on_db!(tx.conn(), conn =>
        sqlx::query_as(SELECT_ALL).fetch_all(conn).await?
    );
    let stored = rows
        .into_iter()
        .map(AclRow::decode)
        .collect::<Result<Vec<_>, _>>()?;
    let matched: Vec<Vec<AclBinding>> = filters
        .iter()
        .map(|f| stored.iter().filter(|b| f.matches(b)).cloned().collect())
        .collect();
    let mut gone: Vec<&AclBinding> = matched.iter().flatten().collect();
    gone.sort();
    gone.dedup();
    for b in &gone {
        on_db!(tx.conn(), conn => {
            let delete = sqlx::query(
                "DELETE FROM acls WHERE resource_type = $1 AND resource_name = $2 \
                 AND pattern_type = $3 AND principal = $4 AND host = $5 \
                 AND operation = $6 AND permission = $7",
            );
            bind_columns!(delete, b)
            .execute(conn)
            .await?;
        });
    }
    if !gone.is_empty() {
        bump(tx.conn()).await?;
    }
    tx.commit().await?;
    Ok(matched)
}

/// The change counter.
pub(crate) async fn version(store: &Store) -> Result<i64, AclError> {
    Ok(on_db!(store.reader(), pool =>
        sqlx::query_scalar("SELECT version FROM acl_version WHERE id = 1")
            .fetch_one(pool)
            .await?
    ))
}
